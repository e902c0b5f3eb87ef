"""The CPU compute dtype: the environment's choice wins, a bad value is a clear error, else the probe."""
from __future__ import annotations


def test_dtype_choice_honours_the_environment(monkeypatch):
    import pytest

    torch = pytest.importorskip("torch")
    from factorspec.models import dtype as mdtype

    mdtype.cpu_dtype_name.cache_clear()
    monkeypatch.setenv(mdtype.ENV_VAR, "float32")
    assert mdtype.default_dtype() is torch.float32
    assert mdtype.default_dtype("cuda") is torch.bfloat16
    mdtype.cpu_dtype_name.cache_clear()
    monkeypatch.setenv(mdtype.ENV_VAR, "float64")
    with pytest.raises(ValueError, match="FACTORSPEC_DTYPE"):
        mdtype.cpu_dtype_name()
    mdtype.cpu_dtype_name.cache_clear()
    monkeypatch.delenv(mdtype.ENV_VAR)
    assert mdtype.cpu_dtype_name() in ("bfloat16", "float32")
    mdtype.cpu_dtype_name.cache_clear()
