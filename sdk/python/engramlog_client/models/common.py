"""Base classes of the SDK's request and response models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class Request(BaseModel):
    """A request body: unknown fields are refused here, before anything is sent (a typo is not silently dropped)."""

    model_config = ConfigDict(extra="forbid")

    def body(self) -> dict[str, Any]:
        """The JSON body: fields left unset (or None) are not sent, so the server's defaults apply."""
        return self.model_dump(mode="json", exclude_unset=True, exclude_none=True)


class Response(BaseModel):
    """A response body: fields a newer server adds are kept (model_extra), never an error."""

    model_config = ConfigDict(extra="allow")
