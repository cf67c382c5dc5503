"""The one way every tool connects to Ray (:func:`connect_ray`), the runtime environment that ships this
package to the workers (:func:`ray_runtime_env`), and the connection, task and clean-up of a builder that
runs one function as Ray tasks (:class:`RayTasks`)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Optional


def _package_dir() -> str:
    return str(Path(__file__).resolve().parent.parent)


def ray_runtime_env() -> dict:
    """``runtime_env`` that ships this package to Ray workers (give it to ``ray.init``).

    Ray uploads local directories only at job level, so a program that calls
    ``ray.init`` itself should pass this; :class:`RayBackend` does when it connects.
    """
    # The shipped copy lives in a per-session directory, so its numba cache would start
    # cold in every Ray session: point the workers (and the engines they start) at a
    # per-node cache directory that outlives sessions, unless the user chose one.
    cache = os.environ.get("UCI_CHECKERS_CACHE_DIR") or os.path.join(tempfile.gettempdir(),
                                                                     "uci_checkers-ray-cache")
    return {"py_modules": [_package_dir()],
            "excludes": ["__pycache__", "*.pyc", "*.nbi", "*.nbc"],
            "env_vars": {"UCI_CHECKERS_CACHE_DIR": cache}}


class RayConnectError(RuntimeError):
    """Ray could not be started or reached (one line for the user)."""


def connect_ray(address: Optional[str], ship_package: bool = True) -> bool:
    """``ray.init`` unless Ray is connected already, the one way every tool connects; True when this
    call connected (the caller then shuts Ray down when done).  ``ship_package``: send this package
    to the workers (see :func:`ray_runtime_env`).  Raises :class:`RayConnectError`."""
    import ray

    if ray.is_initialized():
        return False
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False,
                 runtime_env=ray_runtime_env() if ship_package else None)
    except Exception as exc:
        raise RayConnectError(f"cannot connect to Ray at {address or 'a new local instance'}: {exc}") from exc
    return True


class RayTasks:
    """``fn`` as a Ray task of one CPU, retried once, on the cluster at ``address`` or a new local instance:
    the builders (book, endgame databases) subclass it and keep their own scheduling loops.  Raises
    :class:`RayConnectError` (one line) when Ray is not installed or cannot be reached."""

    def __init__(self, fn: Callable[..., Any], address: Optional[str]) -> None:
        try:
            import ray
        except ImportError as exc:
            raise RayConnectError(f"the ray backend needs Ray: pip install 'uci_checkers[cluster]' ({exc})") from None
        self.ray = ray
        self.started_here = connect_ray(address)
        self.remote = ray.remote(num_cpus=1, max_retries=1)(fn)

    def cancel(self, refs: Iterable[Any]) -> None:
        """Cancel the tasks of ``refs`` (forced: a task may run for minutes); one that has finished or
        cannot be cancelled any more is no error, since the caller is already giving up on it."""
        for ref in refs:
            try:
                self.ray.cancel(ref, force=True)
            except Exception:
                pass

    def close(self) -> None:
        """Shut Ray down if this object started it (a caller's own connection stays)."""
        if self.started_here:
            self.ray.shutdown()
