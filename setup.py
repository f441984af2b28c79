"""For tools that still run ``python setup.py``: scrapyd-deploy builds its egg with
``setup.py clean -a`` and ``setup.py bdist_egg`` (and writes a setup.py of its own,
packaging every directory, when there is none). Everything is declared in pyproject.toml.
"""

from setuptools import setup

setup()
