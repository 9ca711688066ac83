"""holon's version: declared here once; pyproject.toml reads it (setuptools' dynamic
version), the CLI prints it and reports will carry it."""

__version__ = "0.1.0"
