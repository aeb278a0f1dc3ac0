"""The inspector's tabs keep one contract (``common.Tab``): a title, ``layout()`` returning the tab's own
``Views`` dataclass with every field set, and ``wire(page) -> None``; a new tab is its class and one entry
in ``build_demo``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from dataclasses import dataclass, field, fields, is_dataclass

import gradio as gr
import pytest

import memsif.inspector
from memsif import MemSIF, MemSIFConfig
from memsif.inspector import build_demo
from memsif.inspector.common import EMPTIED, Inspector, Page, Tab, Views


def tab_classes() -> list[type]:
    """Every class named ``…Tab`` that a module of the inspector defines."""
    found = []
    for module in pkgutil.iter_modules(memsif.inspector.__path__):
        loaded = importlib.import_module(f"memsif.inspector.{module.name}")
        found += [v for k, v in vars(loaded).items()
                  if k.endswith("Tab") and isinstance(v, type) and v.__module__ == loaded.__name__ and v is not Tab]
    return found


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return build_demo(MemSIF(MemSIFConfig(data_dir=str(tmp_path_factory.mktemp("tabs")))))


def test_the_tabs_are_found():
    assert len(tab_classes()) == 8, tab_classes()


@pytest.mark.parametrize("cls", tab_classes(), ids=lambda c: c.__name__)
def test_every_tab_implements_the_tab_contract(cls):
    """A title; ``layout(self)`` annotated to return a ``Views`` dataclass of its own; ``wire(self, page: Page)
    -> None``."""
    assert isinstance(cls.title, str) and cls.title, f"{cls.__name__} has no title"
    assert list(inspect.signature(cls.layout).parameters) == ["self"], f"{cls.__name__}.layout takes arguments"
    made = typing.get_type_hints(cls.layout)["return"]
    assert isinstance(made, type) and issubclass(made, Views) and is_dataclass(made), (cls.__name__, made)
    assert list(inspect.signature(cls.wire).parameters) == ["self", "page"], f"{cls.__name__}.wire(page)"
    assert typing.get_type_hints(cls.wire) == {"page": Page, "return": type(None)}, f"{cls.__name__}.wire → None"


def test_every_tab_lays_out_its_views_with_every_field_set(demo):
    """Each tab's ``layout`` made its ``Views`` (one per tab on the page), every component field set, in
    its ``gr.Tab``; the views a delete empties are among them."""
    page = demo.page
    made = {typing.get_type_hints(cls.layout)["return"] for cls in tab_classes()}
    assert set(page.views) == made
    for kind, views in page.views.items():
        assert type(views) is kind and isinstance(views.tab, gr.Tab)
        unset = [f.name for f in fields(views) if not hasattr(views, f.name)]
        assert not unset, f"{kind.__name__}: {unset} not set by its layout"
        assert all(isinstance(view, gr.components.Component) for view in views.emptied()), kind.__name__


@dataclass(init=False)
class NotesViews(Views):
    note: gr.Textbox = field(metadata={EMPTIED: ""})
    echo: gr.Markdown


@dataclass(frozen=True)
class NotesTab:
    """A tab a test adds: a note box and its echo."""

    app: Inspector
    title = "Notes"

    def layout(self) -> NotesViews:
        ui = NotesViews()
        ui.note = gr.Textbox(label="Note", elem_id="note")
        ui.echo = gr.Markdown(elem_id="note-echo")
        return ui

    def wire(self, page: Page) -> None:
        n = page[NotesViews]
        n.note.submit(lambda text: text, inputs=n.note, outputs=n.echo, api_name="note")


def test_a_new_tab_is_one_class_and_one_entry(tmp_path):
    """A tab defined here joins the page with one argument: its title, its components, its event, and a
    delete empties its views."""
    assert isinstance(NotesTab(Inspector(MemSIF(MemSIFConfig(data_dir=str(tmp_path))))), Tab)
    demo = build_demo(MemSIF(MemSIFConfig(data_dir=str(tmp_path))), extra_tabs=[NotesTab])
    notes = demo.page[NotesViews]
    assert notes.tab.label == "Notes" and {"note", "note-echo"} <= {b.elem_id for b in demo.blocks.values()}
    assert [fn.outputs for fn in demo.fns.values() if fn.api_name == "note"] == [[notes.echo]]
    forget = next(fn for fn in demo.fns.values() if fn.api_name == "forget")
    assert notes.note in forget.outputs, "a delete leaves the new tab's views as they were"
