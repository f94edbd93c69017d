"""What several contracts share: fields added compatibly are left out of the JSON when absent."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer


class OmitsAbsent(BaseModel):
    """A model whose `omitted_when_absent` fields (compatible additions) are left out of its JSON when
    None, so that a message without them is byte-for-byte what the previous revision wrote and a
    consumer of that revision sees no new key."""

    omitted_when_absent: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name in self.omitted_when_absent:
                if name in data and data[name] is None:
                    del data[name]
        return data
