"""Importing a framework on demand, with an install hint instead of a traceback."""
from __future__ import annotations

import importlib
import types

from opbench.frameworks.base import FrameworkUnavailable

# The versions opbench's own tests run against; the install hint pins them so a user gets a
# combination known to work (the package metadata keeps looser ranges).
TESTED_VERSIONS = {"torch": "2.13.0", "mindspore": "2.10.0", "numpy": "1.26.4"}

INSTALL_HINTS = {
    "torch": (f"pip install torch=={TESTED_VERSIONS['torch']} --index-url "
              "https://download.pytorch.org/whl/cpu (CPU build; CUDA builds: "
              "https://pytorch.org/get-started/locally/)"),
    "mindspore": (f"pip install mindspore=={TESTED_VERSIONS['mindspore']} (CPU build; "
                  "GPU/Ascend builds: https://www.mindspore.cn/install)"),
    "numpy": f"pip install numpy=={TESTED_VERSIONS['numpy']}",
}


def import_framework(module_name: str) -> types.ModuleType:
    """import `module_name`, or raise FrameworkUnavailable with a message fit for a user."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name == module_name:
            hint = INSTALL_HINTS.get(module_name, f"pip install {module_name}")
            raise FrameworkUnavailable(f"{module_name} is not installed: {hint}") from None
        raise FrameworkUnavailable(f"{module_name} is installed but cannot be imported: "
                                   f"{err}") from err
    except Exception as err:  # noqa: BLE001 - a broken install fails in arbitrary ways
        raise FrameworkUnavailable(f"{module_name} is installed but failed to import: "
                                   f"{type(err).__name__}: {err}") from err
