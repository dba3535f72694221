"""The HBase Thrift1 IDL, loaded from the copy that happybase ships.

Using happybase's own ``Hbase.thrift`` (under the module name happybase uses,
``Hbase_thrift``) guarantees the gateway speaks exactly the wire format an
unmodified ``happybase.Connection`` expects.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import happybase
import thriftpy2

IDL_PATH = Path(happybase.__file__).with_name("Hbase.thrift")
MODULE_NAME = "Hbase_thrift"


def load_hbase_thrift() -> ModuleType:
    """Return the loaded ``Hbase_thrift`` module (shared with happybase if already loaded)."""
    loaded = sys.modules.get(MODULE_NAME)
    if loaded is not None:
        return loaded
    module: ModuleType = thriftpy2.load(str(IDL_PATH), module_name=MODULE_NAME)
    return module


hbase_thrift: Any = load_hbase_thrift()
"""The IDL module: ``hbase_thrift.Hbase`` (service), ``TCell``, ``TRowResult``, ``IOError``..."""
