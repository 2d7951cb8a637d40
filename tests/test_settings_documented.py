"""The README's configuration table and .env.example name exactly the variables that
the settings files (Django's config/settings.py, gunicorn's config/gunicorn.conf.py)
read from the environment: a setting added, renamed or removed fails here until the
documentation follows."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT

SETTINGS_FILES = ("config/settings.py", "config/gunicorn.conf.py")
# env.str("NAME", ...), env.bool("NAME"), env("NAME"), env.db("NAME", ...)
ENV_READ = re.compile(r'\benv(?:\.\w+)?\(\s*"([A-Z][A-Z0-9_]*)"')
# os.environ["NAME"], os.environ.get("NAME"), os.getenv("NAME")
OS_READ = re.compile(
    r'\bos\.(?:environ\[|environ\.get\(|getenv\()\s*"([A-Z][A-Z0-9_]*)"'
)
EXAMPLE_LINE = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=", re.MULTILINE)
NAME = re.compile(r"`([A-Z][A-Z0-9_]*)`")


def read_by_settings() -> set[str]:
    names: set[str] = set()
    for path in SETTINGS_FILES:
        text = (REPO_ROOT / path).read_text()
        names |= set(ENV_READ.findall(text)) | set(OS_READ.findall(text))
    return names


def in_env_example() -> set[str]:
    return set(EXAMPLE_LINE.findall((REPO_ROOT / ".env.example").read_text()))


def in_readme_table() -> set[str]:
    """Names in the first column of the README's Configuration table."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names |= set(NAME.findall(line.split("|")[1]))
    return names


def test_the_parsers_find_what_they_should():
    assert {"DATABASE_URL", "SECRET_KEY", "LOG_FORMAT"} <= read_by_settings()
    assert {"WEB_CONCURRENCY"} <= read_by_settings()  # gunicorn's
    assert OS_READ.findall(
        'os.environ["A"] os.environ.get("B", "1") os.getenv("C") env.int("D")'
    ) == ["A", "B", "C"]
    assert {"DEBUG", "LOG_LEVEL"} <= in_env_example()
    assert {"DEBUG", "MAX_UPLOAD_MB", "MAX_UPLOAD_FILES"} <= in_readme_table()


def test_every_setting_read_from_the_environment_is_documented():
    read = read_by_settings()
    assert read - in_readme_table() == set(), "add these to README's Configuration"
    assert read - in_env_example() == set(), "add these to .env.example"


def test_every_documented_setting_still_exists():
    read = read_by_settings()
    assert in_readme_table() - read == set(), "README documents settings not read"
    assert in_env_example() - read == set(), ".env.example lists settings not read"
