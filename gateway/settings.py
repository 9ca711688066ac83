"""Settings: one declarative table, read from `HOLON_*` environment variables.

No settings object exists at import time: `Settings.from_env()` builds one
when a command or the app factory asks. docs/settings.md is checked against
`SETTINGS` by a test, so every setting is documented.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import platformdirs

from schema.errors import EnvironmentFault, UsageError

__all__ = ["DEFAULT_BODY_TIMEOUT_S", "SETTINGS", "Setting", "Settings", "checkout_root"]

DEFAULT_BODY_TIMEOUT_S = 10.0
MAX_BODY_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Setting:
    name: str
    default: str  # shown in docs; computed defaults are described in words
    help: str
    secret: bool = False

    @property
    def env(self) -> str:
        return f"HOLON_{self.name.upper()}"


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "home",
        "./.holon in a source checkout, else the per-user data directory",
        "Folder for the embedded SQLite store, its secret key file and caches.",
    ),
    Setting(
        "database_url",
        "sqlite:///$HOLON_HOME/holon.db",
        "The store. Unset: the embedded SQLite file, which upgrades its own schema. "
        "postgresql+psycopg://user@host:5432/db for several processes or hosts "
        "(run `holon db upgrade` after an upgrade of holon).",
    ),
    Setting(
        "secret_key",
        "$HOLON_HOME/secret.key (created on first use) with SQLite; required with PostgreSQL",
        "Fernet key (32 url-safe base64 bytes) that encrypts agent secrets at rest. "
        "Every process sharing one store needs the same key.",
        secret=True,
    ),
    Setting(
        "gateway_url",
        "unset",
        "Talk to a running gateway over HTTP instead of the store (same as --gateway).",
    ),
    Setting(
        "token",
        "unset",
        "Bearer token for --gateway (or --token-file PATH; --token warns: ps shows it).",
        secret=True,
    ),
    Setting(
        "examples",
        "on",
        "In a source checkout, a fresh embedded store gets the shipped example suites "
        "and agents installed on first use (so the quick start works). `off` starts empty.",
    ),
    Setting(
        "output_retention_days",
        "30",
        "Days an eval keeps agents' outputs; older outputs are dropped (grades, costs and "
        "digests stay). Applied when an eval or worker starts.",
    ),
    Setting(
        "agent_networks",
        "public",
        "Which addresses the gateway service, `holon worker` and `holon evals resume` may "
        "call agents at. `public` refuses loopback, private, link-local (cloud metadata) and "
        "other special ranges, checked when connecting; a comma-separated list of CIDRs "
        "(e.g. 127.0.0.0/8,10.0.0.0/8) allows those too; `any` allows everything. The CLI's "
        "other commands on the store are not limited.",
    ),
    Setting(
        "probe_interval_s",
        "3600",
        "Seconds between the gateway service's identity probes of every enabled agent "
        "(GET …/.well-known/holon-agent); 0 turns them off. Probes run for live traffic "
        "too, so a probe is no sign of an eval.",
    ),
    Setting(
        "revocation_interval_s",
        "3600",
        "Seconds between the gateway service's re-fetches of other issuers' revocation "
        "lists, from the URL kept at import; a certificate an issuer revoked stops being "
        "honoured here. 0 turns them off (`holon certificates recheck` still re-checks).",
    ),
    Setting(
        "canary_share",
        "0.02",
        "Of the live calls that reach an agent, the fraction that each also send the agent "
        "a canary for the same capability: a holdout case graded as an eval cell, billed to "
        "the operator (docs/integrity.md, 'Canaries'). 0 with HOLON_CANARY_FLOOR 0 turns "
        "canaries off.",
    ),
    Setting(
        "canary_floor",
        "24",
        "Canaries a day, on average, to each certified agent and capability whatever its "
        "traffic (a Poisson process: no period an agent could count on); 0: none but those "
        "HOLON_CANARY_SHARE sends.",
    ),
    Setting(
        "canary_ceiling_usd",
        "1.00",
        "The most canaries may cost per agent and UTC day, in USD; a canary whose case cap "
        "would pass it is not sent.",
    ),
    Setting(
        "eval_on_register",
        "off",
        "`on`: when a new agent version is registered through the API, the gateway plans "
        "and starts its full eval at once (its workers run it); `off`: an operator starts it.",
    ),
    Setting(
        "body_timeout_s",
        "10",
        "Seconds the gateway service waits for a whole request body, from the request's "
        "start; a slower body gets 408 and its connection is closed.",
    ),
    Setting(
        "public_url",
        "unset",
        "The gateway's URL as callers reach it (https://gateway.example): the interface "
        "URL of the A2A agent cards it signs; unset, the request's own URL.",
    ),
    Setting(
        "log_level",
        "WARNING",
        "Log level of holon's own log lines on stderr (DEBUG, INFO, WARNING, ERROR).",
    ),
)

_BY_NAME = {s.name: s for s in SETTINGS}
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def checkout_root() -> Path | None:
    """The source checkout this code runs from, if it runs from one."""
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "bin" / "holon").is_file():
        return root
    return None


@dataclass(frozen=True)
class Settings:
    home: Path
    database_url: str
    secret_key: str | None
    gateway_url: str | None
    token: str | None
    log_level: str
    examples: bool
    output_retention_days: int
    agent_networks: str
    probe_interval_s: int
    eval_on_register: bool
    body_timeout_s: float
    sources: Mapping[str, str]  # setting name -> "env" | "default" | a flag ("--home")
    public_url: str | None = None
    revocation_interval_s: int = 3600
    canary_share: float = 0.02
    canary_floor: float = 24.0
    canary_ceiling_usd: Decimal = Decimal("1.00")

    @property
    def embedded(self) -> bool:
        """The default store: a SQLite file under HOLON_HOME that manages itself."""
        return self.sources["database_url"] == "default"

    @property
    def database_path(self) -> Path | None:
        prefix = "sqlite:///"
        if self.database_url.startswith(prefix):
            return Path(self.database_url[len(prefix) :])
        return None

    def given(self, name: str, source: str) -> Settings:
        """These settings, with `name` said to come from `source` (a command-line flag)."""
        return dataclasses.replace(self, sources={**self.sources, name: source})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        sources: dict[str, str] = {}

        def read(name: str) -> str | None:
            raw = env.get(_BY_NAME[name].env)
            value = raw.strip() if raw is not None else None
            sources[name] = "env" if value else "default"
            return value or None

        home_text = read("home")
        if home_text:
            home = Path(home_text).expanduser()
        else:
            root = checkout_root()
            home = root / ".holon" if root else Path(platformdirs.user_data_dir("holon"))
        home = home.absolute()
        database_url = read("database_url") or f"sqlite:///{home / 'holon.db'}"
        log_level = (read("log_level") or "WARNING").upper()
        if log_level not in _LOG_LEVELS:
            raise UsageError(
                f"HOLON_LOG_LEVEL must be one of {', '.join(_LOG_LEVELS)}, got {log_level!r}"
            )

        def on_off(name: str, default: str) -> bool:
            value = (read(name) or default).lower()
            if value not in ("on", "off"):
                raise UsageError(f"{_BY_NAME[name].env} must be on or off, got {value!r}")
            return value == "on"

        def whole(name: str, default: str, unit: str) -> int:
            text = read(name) or default
            if not text.isdigit():
                raise UsageError(
                    f"{_BY_NAME[name].env} must be a whole number of {unit}, got {text!r}"
                )
            return int(text)

        def seconds(name: str, default: float, high: float) -> float:
            text = read(name)
            if text is None:
                return default
            try:
                value = float(text)
            except ValueError:
                value = -1.0
            if not 0 < value <= high:  # NaN too
                raise UsageError(
                    f"{_BY_NAME[name].env} must be a number of seconds above 0 and at most "
                    f"{high:g}, got {text!r}"
                )
            return value

        examples = on_off("examples", "on")
        body_timeout_s = seconds("body_timeout_s", DEFAULT_BODY_TIMEOUT_S, MAX_BODY_TIMEOUT_S)
        retention_days = whole("output_retention_days", "30", "days")
        probe_interval_s = whole("probe_interval_s", "3600", "seconds")
        revocation_interval_s = whole("revocation_interval_s", "3600", "seconds")
        eval_on_register = on_off("eval_on_register", "off")
        networks = read("agent_networks") or "public"
        from gateway._network import parse_networks

        parse_networks(networks)  # refuse a bad value at start-up, not at the first call

        def fraction(name: str, default: str) -> float:
            text = read(name) or default
            try:
                value = float(text)
            except ValueError:
                value = -1.0
            if not 0 <= value <= 1:  # NaN too
                raise UsageError(f"{_BY_NAME[name].env} must be a number from 0 to 1, got {text!r}")
            return value

        def amount(name: str, default: str) -> Decimal:
            text = read(name) or default
            try:
                value = Decimal(text)
            except ArithmeticError:
                value = Decimal(-1)
            if not value.is_finite() or value < 0:
                raise UsageError(f"{_BY_NAME[name].env} must be an amount of USD, got {text!r}")
            return value

        canary_share = fraction("canary_share", "0.02")
        canary_floor = float(whole("canary_floor", "24", "canaries a day"))
        canary_ceiling = amount("canary_ceiling_usd", "1.00")
        public_url = read("public_url")
        if public_url is not None:
            public_url = public_url.rstrip("/")
            if not public_url.startswith(("http://", "https://")) or not public_url.isascii():
                raise UsageError(f"HOLON_PUBLIC_URL must be an http(s) URL, not {public_url!r}")
        return cls(
            probe_interval_s=probe_interval_s,
            revocation_interval_s=revocation_interval_s,
            eval_on_register=eval_on_register,
            body_timeout_s=body_timeout_s,
            agent_networks=networks,
            output_retention_days=retention_days,
            examples=examples,
            home=home,
            database_url=database_url,
            secret_key=read("secret_key"),
            gateway_url=read("gateway_url"),
            public_url=public_url,
            canary_share=canary_share,
            canary_floor=canary_floor,
            canary_ceiling_usd=canary_ceiling,
            token=read("token"),
            log_level=log_level,
            sources=sources,
        )

    def resolve_secret_key(self) -> str | None:
        """The key for agent secrets: the setting, or with SQLite a key file under home.

        A PostgreSQL store is shared by hosts, so a per-host key file would
        silently diverge: there the setting is required (None means unset).
        """
        if self.secret_key:
            return self.secret_key
        if self.database_path is None:
            return None
        path = self.home / "secret.key"
        try:
            self.home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            # mkdir says "File exists" of a file standing where the folder should.
            reason = "Not a directory" if isinstance(exc, FileExistsError) else exc.strerror
            raise EnvironmentFault(
                f"cannot use HOLON_HOME {self.home}: {reason or exc}",
                hint="point HOLON_HOME at a writable folder",
            ) from None
        try:
            if not path.exists():
                from records import new_key

                key = new_key().decode("ascii")
                # O_EXCL: two first runs at once must not write two different keys.
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as fh:
                    fh.write(key + "\n")
                return key
        except FileExistsError:
            pass  # another first run wrote it a moment ago: read that one
        except OSError as exc:
            raise EnvironmentFault(
                f"cannot write the secret key file {path}: {exc.strerror or exc}"
            ) from None
        try:
            return path.read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else "it is not a key (not text)"
            raise EnvironmentFault(
                f"cannot use the secret key file {path}: {reason}",
                hint="restore the key file from a backup; without it agent secrets cannot be "
                "decrypted",
            ) from None

    def describe(self) -> list[dict[str, Any]]:
        """Every setting with its effective value (secrets masked) and where it came from."""
        rows = []
        for setting in SETTINGS:
            value: Any = getattr(self, setting.name)
            if isinstance(value, Path):
                value = str(value)
            if setting.secret and value:
                value = "(set)"
            rows.append(
                {
                    "name": setting.name,
                    "env": setting.env,
                    "value": value,
                    "source": self.sources[setting.name],
                    "default": setting.default,
                    "help": setting.help,
                }
            )
        return rows
