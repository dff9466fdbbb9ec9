"""A package's lazy names load their module on first use only, and are kept after."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from governance.core._lazy import lazy_attributes


def test_a_lazy_name_imports_its_module_on_first_use_and_is_kept() -> None:
    namespace: dict[str, Any] = {"__name__": "pkg"}
    getattr_ = lazy_attributes(namespace, {"rgb_to_hsv": "colorsys"})  # a module nobody uses
    sys.modules.pop("colorsys", None)
    assert "rgb_to_hsv" not in namespace
    found = getattr_("rgb_to_hsv")
    assert "colorsys" in sys.modules
    assert namespace["rgb_to_hsv"] is found is sys.modules["colorsys"].rgb_to_hsv


def test_a_name_not_in_the_table_is_an_attribute_error_naming_the_package() -> None:
    getattr_ = lazy_attributes({"__name__": "pkg"}, {})
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'missing'"):
        getattr_("missing")
