"""A YAML loader that remembers the line of every mapping and key, so errors can point into the file."""

from __future__ import annotations

from typing import Any

import yaml

# libyaml's loader when it is built in: several times faster on the knowledge files
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class LineDict(dict[str, Any]):
    """A mapping that remembers the line of each key, so errors can point into the file."""

    start_line: int = 0
    key_lines: dict[str, int]


class LineLoader(_BaseLoader):  # type: ignore[misc]  # yaml ships no types
    pass


def _construct_mapping(loader: LineLoader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    result = LineDict()
    result.start_line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
