"""SettingsReader: the SITEMAP_CRAWL_* settings typed, refused out of their range, and what
Scrapy's own settings make of them."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.exporters import CsvItemExporter
from scrapy.settings import Settings

from sitemap_crawl.exporters import CsvPageExporter
from sitemap_crawl.settings_reader import SettingError, SettingsReader


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("SITEMAP_CRAWL_MAX_SIZE", "8KB", "a positive whole number"),
        ("SITEMAP_CRAWL_MAX_SIZE", "0", "a positive whole number"),
        ("SITEMAP_CRAWL_MAX_SIZE", -5, "a positive whole number"),
        # (Scrapy's own size cap, read with it: a ValueError traceback)
        ("DOWNLOAD_MAXSIZE", "abc", "a whole number of bytes, 0 or more (0: no cap)"),
        ("DOWNLOAD_MAXSIZE", "1.5", "a whole number of bytes, 0 or more (0: no cap)"),
        ("DOWNLOAD_MAXSIZE", "1.0", "a whole number of bytes, 0 or more (0: no cap)"),
        ("DOWNLOAD_MAXSIZE", "", "a whole number of bytes, 0 or more (0: no cap)"),
        ("DOWNLOAD_MAXSIZE", "-1", "a whole number of bytes, 0 or more (0: no cap)"),
        ("CONCURRENT_REQUESTS", "abc", "a whole number, 0 or more"),  # (Scrapy's, read with them: a traceback)
        ("CONCURRENT_REQUESTS", "-3", "a whole number, 0 or more"),
        ("CONCURRENT_REQUESTS", "8.0", "a whole number, 0 or more"),  # (Scrapy's int() fails on it)
        ("LOGSTATS_INTERVAL", "abc", "a number of seconds, 0 or more"),
        # (read to choose a page an item: a ValueError traceback from this project's own check)
        ("FEED_EXPORT_BATCH_ITEM_COUNT", "abc", "a whole number, 0 or more (0: one file)"),
        ("FEED_EXPORT_BATCH_ITEM_COUNT", "1.5", "a whole number, 0 or more (0: one file)"),
        ("CLOSESPIDER_ITEMCOUNT", "abc", "a whole number, 0 or more (0: no limit)"),
        (
            "SITEMAP_CRAWL_SHARD",
            "3/2",
            "index/count, 0 <= index < count (the crawl sets it for its helper processes)",
        ),  # (tracebacks, exit 0)
        ("SITEMAP_CRAWL_SHARD", "x", "index/count, 0 <= index < count (the crawl sets it for its helper processes)"),
        ("SITEMAP_CRAWL_MAX_DEPTH", "ten", "a whole number from 0 to 100"),
        ("SITEMAP_CRAWL_MAX_DEPTH", "-1", "a whole number from 0 to 100"),
        ("SITEMAP_CRAWL_MAX_DEPTH", "2.5", "a whole number from 0 to 100"),
        # (a tree of 470 levels and more went over Python's recursion limit: no tree file, exit 0)
        ("SITEMAP_CRAWL_MAX_DEPTH", "101", "a whole number from 0 to 100"),
        ("SITEMAP_CRAWL_CONCURRENT_SITEMAPS", "x", "a positive whole number"),
        ("SITEMAP_CRAWL_CONCURRENT_SITEMAPS", 0, "a positive whole number"),
        ("SITEMAP_CRAWL_CONCURRENT_SITES", "0", "a positive whole number"),
        ("SITEMAP_CRAWL_MAX_INDEX_CHILDREN", "0", "a positive whole number"),
        ("SITEMAP_CRAWL_BATCH_SIZE", "-1", "a whole number, 0 or more"),
        ("SITEMAP_CRAWL_TREE_LOG_LINES", "all", "a whole number, 0 or more"),
        ("SITEMAP_CRAWL_PROCESSES", "0", "a positive whole number"),
        ("SITEMAP_CRAWL_PARSE_WORKERS", "-2", "a whole number, 0 or more"),
        ("SITEMAP_CRAWL_PARSE_WORKERS", "many", "a whole number, 0 or more, auto, true or false"),
        ("SITEMAP_CRAWL_PARSE_WORKER_MIN_SIZE", "1MB", "a whole number, 0 or more"),
        ("SITEMAP_CRAWL_AUDIT_BACKLOG", "-1", "a whole number, 0 or more"),
        ("SITEMAP_CRAWL_IDLE_CONNECTION_TIMEOUT", "0", "a number of seconds above 0"),
        ("SITEMAP_CRAWL_IDLE_CONNECTION_TIMEOUT", "nan", "a number of seconds above 0"),
        ("SITEMAP_CRAWL_LOADER_QUEUE_SIZE", "0", "a positive whole number"),
        ("SITEMAP_CRAWL_LOADER_SAVE_INTERVAL", "-1", "a number of seconds, 0 or more"),
        ("SITEMAP_CRAWL_LOADER_LOG_INTERVAL", "often", "a number of seconds, 0 or more"),
        ("SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT", "0", "a positive whole number"),
        ("SITEMAP_CRAWL_QUEUE_CLAIM_AFTER", "0", "a number of seconds above 0"),
        ("SITEMAP_CRAWL_QUEUE_MAX_ATTEMPTS", "0", "a positive whole number"),
        # (Scrapy's getbool raised a traceback from the spider's from_crawler)
        ("SITEMAP_CRAWL_GC_TUNING", "maybe", "true or false (or 1/0, yes/no)"),
        ("SITEMAP_CRAWL_GC_TUNING", "", "true or false (or 1/0, yes/no)"),
        # (a TypeError or AttributeError traceback)
        ("SITEMAP_CRAWL_KNOWN_PATHS", 5, "a list of paths or a comma-separated string"),
        ("SITEMAP_CRAWL_KNOWN_PATHS", ["sitemap.xml", 5], "a list of paths or a comma-separated string"),
    ],
)
def test_a_number_out_of_its_range_is_refused_by_check(name: str, value: object, allowed: str) -> None:
    with pytest.raises(SettingError) as raised:
        SettingsReader(Settings({name: value})).check()
    assert str(raised.value) == f"{name} must be {allowed}, not {value!r}"


@pytest.mark.parametrize(
    "settings",
    [
        {"CONCURRENT_REQUESTS": "abc", "SITEMAP_CRAWL_LOADER_MAX_IN_FLIGHT": 50},
        {"LOGSTATS_INTERVAL": "abc", "SITEMAP_CRAWL_LOADER_LOG_INTERVAL": 5},
    ],
)
def test_scrapys_own_settings_are_checked_whatever_overrides_them_here(settings: dict[str, Any]) -> None:
    # the loader's own setting given, Scrapy's bad value went unchecked (a traceback later)
    with pytest.raises(SettingError):
        SettingsReader(Settings(settings)).check()


@pytest.mark.parametrize(("value", "tuned"), [("yes", True), ("0", False), (False, False), ("TRUE", True)])
def test_gc_tuning_reads_booleans_as_the_arguments_do(value: object, tuned: bool) -> None:
    assert SettingsReader(Settings({"SITEMAP_CRAWL_GC_TUNING": value})).gc_tuning is tuned


def test_an_unknown_known_paths_mode_is_refused_by_check() -> None:
    with pytest.raises(
        SettingError, match="SITEMAP_CRAWL_KNOWN_PATHS_MODE must be always or fallback, not 'sometimes'"
    ):
        SettingsReader(Settings({"SITEMAP_CRAWL_KNOWN_PATHS_MODE": "Sometimes"})).check()
    with pytest.raises(SettingError, match="must be always or fallback, not ''"):  # (-s ..._MODE= ran as always)
        SettingsReader(Settings({"SITEMAP_CRAWL_KNOWN_PATHS_MODE": ""})).check()
    assert SettingsReader(Settings({"SITEMAP_CRAWL_KNOWN_PATHS_MODE": " Fallback"})).known_paths_mode == "fallback"


def test_known_paths_may_be_a_json_list() -> None:
    # -s SITEMAP_CRAWL_KNOWN_PATHS='["sitemap.xml"]' probed the path /["sitemap.xml"]
    reader = SettingsReader(Settings({"SITEMAP_CRAWL_KNOWN_PATHS": ' ["sitemap.xml", "maps/a,b.xml"]'}))
    assert reader.known_paths == ["sitemap.xml", "maps/a,b.xml"]
    for bad in ('["sitemap.xml"', "[1, 2]"):
        with pytest.raises(SettingError, match="SITEMAP_CRAWL_KNOWN_PATHS"):
            SettingsReader(Settings({"SITEMAP_CRAWL_KNOWN_PATHS": bad})).check()


@pytest.mark.parametrize("value", ["sitemap.xml,http://[::1", ["sitemap.xml", "ftp://host/a.xml"], "http://h:99999/a"])
def test_a_known_path_that_makes_no_url_is_refused_by_check(value: object) -> None:
    # (it was a traceback at the start of the crawl, nothing mapped, exit 0)
    with pytest.raises(SettingError, match=r"SITEMAP_CRAWL_KNOWN_PATHS: .* is not a path or an http"):
        SettingsReader(Settings({"SITEMAP_CRAWL_KNOWN_PATHS": value})).check()
    assert SettingsReader(Settings({"SITEMAP_CRAWL_KNOWN_PATHS": "maps/a.xml, /b.xml,https://h/c"})).known_paths == [
        "maps/a.xml",
        "/b.xml",
        "https://h/c",
    ]


def test_the_defaults_and_the_edges_of_each_range_pass() -> None:
    SettingsReader(Settings()).check()
    config = SettingsReader(
        Settings(
            {
                "SITEMAP_CRAWL_MAX_SIZE": "1",
                "SITEMAP_CRAWL_MAX_DEPTH": "0",
                "SITEMAP_CRAWL_BATCH_SIZE": 0,
                "SITEMAP_CRAWL_PARSE_WORKERS": "false",
                "SITEMAP_CRAWL_PROCESSES": "auto",
                "SITEMAP_CRAWL_LOADER_LOG_INTERVAL": 0,
                "SITEMAP_CRAWL_IDLE_CONNECTION_TIMEOUT": "0.5",
            }
        )
    )
    config.check()
    assert (config.max_size, config.max_depth, config.batch_size, config.parse_workers) == (1, 0, 0, 0)
    assert (config.loader_log_interval, config.idle_connection_timeout) == (0.0, 0.5)


FEED = "pages.jsonl"


@pytest.mark.parametrize(
    "settings",
    [
        {"FEED_EXPORT_BATCH_ITEM_COUNT": 100},
        {"FEEDS": {FEED: {"format": "jsonlines", "batch_item_count": 100}}},
        {"CLOSESPIDER_ITEMCOUNT": 10},
        {"FEEDS": {FEED: {"format": "jsonlines", "item_classes": ["sitemap_crawl.items.SitemapPage"]}}},
        {"FEEDS": {FEED: {"format": "jsonlines", "item_filter": "myproject.filters.NewsOnly"}}},
    ],
    ids=["feed split", "one feed split", "closespider itemcount", "item classes", "item filter"],
)
def test_settings_that_count_or_filter_items_make_each_page_an_item(settings: dict[str, Any]) -> None:
    # Scrapy counts and filters items: with pages in batches, it counted and filtered batches
    reader = SettingsReader(Settings({"SITEMAP_CRAWL_BATCH_SIZE": 250, **settings}))

    assert reader.pages_as_items
    assert reader.batch_size == 0


def test_pages_travel_in_batches_otherwise() -> None:
    settings = {"CLOSESPIDER_ITEMCOUNT": 0, "FEEDS": {FEED: {"format": "jsonlines", "item_classes": []}}}
    exporters = {"FEED_EXPORTERS": {"jsonlines": "sitemap_crawl.exporters.JsonLinesPageExporter"}}
    reader = SettingsReader(Settings({"SITEMAP_CRAWL_BATCH_SIZE": 250, **settings, **exporters}))

    assert not reader.pages_as_items
    assert reader.batch_size == 250


@pytest.mark.parametrize(
    ("exporter", "in_batches"),
    [
        ("scrapy.exporters.CsvItemExporter", False),  # a project's own: it wrote a row a batch
        (CsvItemExporter, False),
        ("sitemap_crawl.exporters.CsvPageExporter", True),
        (CsvPageExporter, True),
    ],
)
def test_a_feed_whose_exporter_does_not_unroll_batches_gets_a_page_an_item(exporter: Any, in_batches: bool) -> None:
    settings = {"FEEDS": {"pages.csv": {"format": "csv"}}, "FEED_EXPORTERS": {"csv": exporter}}
    assert SettingsReader(Settings({"SITEMAP_CRAWL_BATCH_SIZE": 250, **settings})).pages_as_items is not in_batches


@pytest.mark.parametrize(
    "settings",
    [
        {"DOWNLOAD_SLOTS": {"h.test": {"concurrency": value}}}
        # (a string failed every download of the slot, 0 or less held them for ever)
        for value in ("abc", None, "2", 0, -3, 1.5, True)
    ],
)
def test_a_slot_concurrency_that_is_no_number_is_refused_by_check(settings: dict[str, Any]) -> None:
    # the spider's gate raised in its start: the crawl hung, one site "in flight" for ever
    with pytest.raises(SettingError, match="DOWNLOAD_SLOTS concurrency must be whole numbers"):
        SettingsReader(Settings(settings)).check()


def test_a_bound_per_address_keeps_a_many_site_run_in_one_process() -> None:
    # sites are split across processes by host name: hosts of one address in two processes
    # would each be held to the bound, twice it in all
    config = SettingsReader(Settings({"CONCURRENT_REQUESTS_PER_IP": 2, "SITEMAP_CRAWL_PROCESSES": 2}))
    assert config.crawl_processes == 1
    assert SettingsReader(Settings({"SITEMAP_CRAWL_PROCESSES": 2})).crawl_processes == 2


def test_a_feeds_batch_item_count_that_is_no_number_is_refused_by_check() -> None:
    feeds = {"pages-%(batch_id)s.jsonl": {"format": "jsonlines", "batch_item_count": "abc"}}
    with pytest.raises(SettingError) as raised:
        SettingsReader(Settings({"FEEDS": feeds})).check()
    assert str(raised.value) == (
        "FEEDS: pages-%(batch_id)s.jsonl: batch_item_count must be a whole number, 0 or more (0: one file), not 'abc'"
    )


@pytest.mark.parametrize("name", ["tree_file", "history_file", "audit_file", "report_file"])
@pytest.mark.parametrize(("value", "path"), [(None, None), ("", None), ("  ", None), (" t.x", " t.x"), ("t.x", "t.x")])
def test_a_file_setting_of_only_spaces_is_off(name: str, value: object, path: str | None) -> None:
    # "-s SITEMAP_CRAWL_TREE_FILE=' '" wrote a file named " " (a history of that name was opened)
    setting = {
        "tree_file": "SITEMAP_CRAWL_TREE_FILE",
        "history_file": "SITEMAP_CRAWL_HISTORY",
        "audit_file": "SITEMAP_CRAWL_AUDIT_FILE",
        "report_file": "SITEMAP_CRAWL_REPORT_FILE",
    }[name]
    assert getattr(SettingsReader(Settings({setting: value})), name) == path
