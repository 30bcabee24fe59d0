"""Who this person is on a team MLflow server that runs MLflow's own authentication
(``mlflow server --app-name basic-auth``).

A user's credentials come from the environment (``MLFLOW_TRACKING_USERNAME`` and
``MLFLOW_TRACKING_PASSWORD``, which MLflow's client reads) or from MLflow's own credentials file
(``~/.mlflow/credentials``, section ``[mlflow]``, keys ``mlflow_tracking_username`` and
``mlflow_tracking_password``), which must be readable by its owner only: a file that the group
or others can read is refused, saying so. Never from a workload's YAML, a command line, a run's
params or tags, or a log.

``use_credentials`` puts what it found into this process's environment, so that MLflow's client
here and every process started from here (kernels, supervisors, ranks, Ray nodes) send them:
they travel only through environments. ``Credentials`` never shows its password (``repr``), and
``hide_secrets`` takes any secret of the environment out of a text before it is stored.
"""

from __future__ import annotations

import base64
import configparser
import os
import stat
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

USERNAME = "MLFLOW_TRACKING_USERNAME"
PASSWORD = "MLFLOW_TRACKING_PASSWORD"
TOKEN = "MLFLOW_TRACKING_TOKEN"
NAMES = (USERNAME, PASSWORD)
SECRET_NAMES = (PASSWORD, TOKEN)  # never stored, logged nor shown
_SECTION = "mlflow"


class CredentialsError(RuntimeError):
    """The credentials file cannot be used (readable by others, unreadable, half filled)."""


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)
    source: str = "the environment"  # for messages: where they come from (never the password)

    def env(self) -> dict[str, str]:
        """The variables MLflow's client reads, for a child's environment."""
        return {USERNAME: self.username, PASSWORD: self.password}

    def authorization(self) -> str:
        """The ``Authorization`` header MLflow's client sends with them."""
        pair = f"{self.username}:{self.password}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")


def credentials_path() -> Path:
    """MLflow's own credentials file (what its client reads: ``~/.mlflow/credentials``)."""
    return Path(os.path.expanduser("~/.mlflow/credentials"))


def read_credentials_file(path: Path | None = None) -> tuple[str | None, str | None]:
    """(username, password) of the credentials file; (None, None) when there is none. Raises
    CredentialsError when the group or others may read it."""
    path = credentials_path() if path is None else path
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None, None
    except OSError as error:
        raise CredentialsError(_unreadable(path, error)) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise CredentialsError(
            f"MLflow's credentials file {path} can be read by other users (mode "
            f"{stat.S_IMODE(mode):03o}): it holds your password, so jupyter-air does not use it. "
            f"Make it yours alone: chmod 600 {path}"
        )
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, configparser.Error) as error:
        raise CredentialsError(_unreadable(path, error)) from None
    if _SECTION not in parser:
        return None, None
    section = parser[_SECTION]
    return section.get(USERNAME.lower()) or None, section.get(PASSWORD.lower()) or None


def _unreadable(path: Path, error: BaseException) -> str:
    return f"MLflow's credentials file {path} cannot be read: {error}"


def user_credentials(
    environ: Mapping[str, str] | None = None, path: Path | None = None
) -> Credentials | None:
    """This user's credentials for the tracking server, as MLflow's client would find them (the
    environment first, then the credentials file), or None when there are none."""
    env = os.environ if environ is None else environ
    username, password = env.get(USERNAME) or None, env.get(PASSWORD) or None
    source = f"{USERNAME} and {PASSWORD}"
    if not (username and password):
        file_user, file_password = read_credentials_file(path)
        if file_user or file_password:
            where = path if path is not None else credentials_path()
            source = f"{where}" if not (username or password) else f"{source} and {where}"
        username, password = username or file_user, password or file_password
    if not username and not password:
        return None
    if not (username and password):
        missing = PASSWORD if username else USERNAME
        raise CredentialsError(
            f"MLflow credentials without a {'password' if username else 'user name'}: set "
            f"{missing} (or {missing.lower()} in the [mlflow] section of {credentials_path()})."
        )
    return Credentials(username, password, source)


def use_credentials(environ: MutableMapping[str, str] | None = None) -> Credentials | None:
    """Find this user's credentials and put them in ``environ`` (default: this process's), where
    MLflow's client and every child process read them. None when there are none."""
    env = os.environ if environ is None else environ
    found = user_credentials(env)
    if found is not None:
        env.update(found.env())
    return found


def credentials_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The credential variables of ``environ`` (default: this process's), for a child that does
    not inherit the whole environment (a Ray node)."""
    env = os.environ if environ is None else environ
    return {name: env[name] for name in NAMES if env.get(name)}


def hide_secrets(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret of the environment (password, token) replaced by ``***``."""
    env = os.environ if environ is None else environ
    for name in SECRET_NAMES:
        secret = env.get(name)
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def refused_message(url: str | None, username: str) -> str:
    """What a person whose user name and password ``url`` refused is told."""
    return f"MLflow at {url} refused user {username}: wrong password or unknown user."
