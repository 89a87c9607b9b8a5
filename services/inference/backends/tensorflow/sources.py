"""Where a TensorFlow model comes from: a builtin Keras application, a ``.keras`` file, or
a SavedModel (a directory, or a .tar/.tar.gz/.tgz/.zip archive of one).

Checksums. A ``.keras`` file or a SavedModel archive is checked like every model file: the
sha256 of its bytes (``verify_model_files``). A SavedModel *directory* has no bytes of its
own, so its sha256 is defined by ``savedmodel_dir_sha256``: the sha256 of one line per
regular file, ``<path relative to the directory, POSIX>\\0<sha256 of the file>\\n``, in
sorted path order. Symbolic links are refused, so what was hashed is what is loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from services.core.architectures import architecture_problem
from services.core.manifest import ManifestError, ModelManifest, sha256_of, verify_model_files
from services.inference.backend_interface import BackendError
from shared.settings import get_settings

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".zip")
DEFAULT_SEED = 0


def savedmodel_dir_sha256(folder: Path) -> str:
    """The sha256 of a SavedModel directory, as defined in this module's docstring."""
    lines: list[str] = []
    for path in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix()):
        if path.is_symlink():
            raise BackendError(
                f"source.file.path: {path} is a symbolic link; a SavedModel must hold files only"
            )
        if path.is_file():
            lines.append(f"{path.relative_to(folder).as_posix()}\0{sha256_of(path)}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def build_keras_application(
    spec: str, input_shape: tuple[int, ...], seed: int = DEFAULT_SEED
) -> Any:
    """``keras:<ApplicationName>`` with random weights (``weights=None``) from ``seed``."""
    import keras

    # The same check, and message, as `benchstack manifest validate`.
    problem = architecture_problem(spec, "tensorflow")
    if problem is not None:
        raise BackendError(problem)
    factory = getattr(keras.applications, spec.partition(":")[2])
    keras.utils.set_random_seed(seed)
    try:
        return factory(weights=None, input_shape=input_shape)
    except ValueError as exc:
        raise BackendError(f"inputs[0].shape: {input_shape} does not fit {spec}: {exc}") from exc


def _is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _extract(archive: Path, into: Path) -> None:
    if archive.name.lower().endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                target = (into / member).resolve()
                if not target.is_relative_to(into.resolve()):
                    raise BackendError(
                        f"source.file.path: {archive.name} has an entry outside itself: {member}"
                    )
            zf.extractall(into)
    else:
        with tarfile.open(archive) as tf:
            # The "data" filter refuses absolute paths, links out of the tree and devices.
            tf.extractall(into, filter="data")


def _savedmodel_root(folder: Path) -> Path:
    """The folder holding saved_model.pb: the archive's top level or its single sub-folder."""
    if (folder / "saved_model.pb").is_file():
        return folder
    children = [c for c in folder.iterdir() if c.is_dir()]
    if len(children) == 1 and (children[0] / "saved_model.pb").is_file():
        return children[0]
    raise BackendError("source.file.path: the archive holds no saved_model.pb at its top level")


def unpack_savedmodel(archive: Path, digest: str) -> Path:
    """Extract a checked archive once into ``<data_dir>/extracted/<sha256>``; reuse it later."""
    root = get_settings().data_dir / "extracted"
    folder = root / digest
    if not folder.is_dir():
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".extracting-", dir=root))
        try:
            _extract(archive, staging)
            # OSError: another worker extracted the same archive first; use that one.
            with contextlib.suppress(OSError):
                os.replace(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return _savedmodel_root(folder)


def verified_model_path(manifest: ModelManifest) -> Path:
    """Check ``source.file`` against its sha256; return a .keras file or a SavedModel folder."""
    model_file = manifest.source.file
    if model_file is None or model_file.path is None:
        raise BackendError("source.file.path: a local .keras file or SavedModel is required")
    path = manifest.resolve_path(model_file.path)
    if path.is_dir():
        actual = savedmodel_dir_sha256(path)
        if actual != model_file.sha256:
            raise ManifestError(
                [
                    f"source.file.sha256: mismatch for SavedModel directory {path.name}: "
                    f"manifest says {model_file.sha256}, directory has {actual} "
                    "(see savedmodel_dir_sha256)"
                ],
                manifest.ref,
            )
        return path
    (checked,) = verify_model_files(manifest)
    if _is_archive(checked):
        return unpack_savedmodel(checked, model_file.sha256)
    if checked.suffix.lower() == ".keras":
        return checked
    raise BackendError(
        f"source.file.path: {checked.name!r} is not accepted; accepted: a .keras file, a "
        f"SavedModel directory or a SavedModel archive ({', '.join(ARCHIVE_SUFFIXES)})"
    )
