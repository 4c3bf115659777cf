"""Running the analysis notebooks (``notebooks/*.ipynb``) with parameters, headless.

papermill's convention without papermill: the cell tagged ``parameters`` holds the
defaults; :func:`run_notebook` inserts a cell tagged ``injected-parameters`` right after it
with the values given, executes every cell with nbclient and (optionally) writes the
executed notebook::

    from triple_py.bench.notebook import run_notebook
    run_notebook("notebooks/unary-analysis.ipynb",
                 {"results": "results/seed-unary-20261130-120000"},
                 output="results/seed-unary-20261130-120000/unary-analysis.ipynb")

or ``python -m triple_py.bench.notebook notebooks/unary-analysis.ipynb -p results DIR
[-o OUT.ipynb]``. papermill itself works on these notebooks too.

The kernel runs this interpreter (``sys.executable``: e.g. the project's .venv) through a
kernelspec written into a temporary directory, whatever kernels Jupyter has installed
(Debian's ``python3`` kernel runs /usr/bin/python3, which may not see triple_py). Needs
``python3-nbclient``, ``python3-nbformat`` and ``python3-ipykernel``.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence, Union

__all__ = ["run_notebook", "inject_parameters", "kernel_spec", "KERNEL_NAME",
           "NotebookFailed"]

#: The name of the kernelspec :func:`kernel_spec` writes.
KERNEL_NAME = "triple-py"


class NotebookFailed(RuntimeError):
    """A cell raised: the message names the cell and the error; ``notebook`` is the
    partly executed notebook (outputs up to the failure)."""

    def __init__(self, message: str, notebook: Any = None) -> None:
        super().__init__(message)
        self.notebook = notebook


def inject_parameters(nb: Any, parameters: Mapping[str, Any]) -> Any:
    """Inserts a code cell tagged ``injected-parameters`` assigning ``parameters`` after
    the cell tagged ``parameters`` (at the top when there is none); replaces a previous
    injected cell. Values must be Python literals (str, numbers, bools, None, lists,
    dicts; paths are passed as str). Returns ``nb`` (changed in place)."""
    import nbformat

    lines = ["# Parameters (injected)"]
    for name, value in parameters.items():
        if not str(name).isidentifier():
            raise ValueError(f"bad parameter name {name!r}")
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        text = repr(value)
        try:
            ast.literal_eval(text)  # only literals: what papermill accepts too
        except (ValueError, SyntaxError):
            raise ValueError(f"parameter {name}: {text} is not a Python literal") from None
        lines.append(f"{name} = {text}")
    cell = nbformat.v4.new_code_cell("\n".join(lines))
    cell.metadata["tags"] = ["injected-parameters"]
    cells = [c for c in nb.cells if "injected-parameters" not in c.get("metadata", {}).get(
        "tags", [])]
    at = 0
    for i, c in enumerate(cells):
        if "parameters" in c.get("metadata", {}).get("tags", []):
            at = i + 1
            break
    cells.insert(at, cell)
    nb.cells = cells
    return nb


@contextlib.contextmanager
def kernel_spec(directory: Optional[Union[str, Path]] = None,
                python: Optional[str] = None,
                display_name: Optional[str] = None) -> Iterator[Path]:
    """A kernelspec directory holding ``<dir>/triple-py/kernel.json`` that runs
    ``python`` (default: this interpreter) with ipykernel; a temporary one unless
    ``directory`` is given. Yields the directory to hand to a KernelSpecManager.
    ``display_name`` is what Jupyter's kernel menu shows (default: ``Python (<path>)``)."""
    with contextlib.ExitStack() as stack:
        root = Path(directory) if directory else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="triple-py-kernel-")))
        spec_dir = root / KERNEL_NAME
        spec_dir.mkdir(parents=True, exist_ok=True)
        spec = {"argv": [python or sys.executable, "-m", "ipykernel_launcher", "-f",
                         "{connection_file}"],
                "display_name": display_name or f"Python ({python or sys.executable})",
                "language": "python",
                "env": {"PYDEVD_DISABLE_FILE_VALIDATION": "1"},
                "metadata": {"debugger": False}}
        (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1) + "\n")
        yield root


def run_notebook(notebook: Union[str, Path], parameters: Optional[Mapping[str, Any]] = None,
                 output: Optional[Union[str, Path]] = None,
                 cwd: Optional[Union[str, Path]] = None, timeout: float = 600.0,
                 kernel_dir: Optional[Union[str, Path]] = None,
                 python: Optional[str] = None) -> Any:
    """Executes ``notebook`` with ``parameters`` injected (see :func:`inject_parameters`);
    returns the executed notebook (an nbformat NotebookNode) and writes it to ``output``
    when given (also when a cell fails). ``cwd`` (default: the notebook's directory) is
    the kernel's working directory; ``timeout`` applies per cell. Raises
    :class:`NotebookFailed` when a cell raises."""
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    from traitlets import default

    path = Path(notebook)
    nb = nbformat.read(str(path), as_version=4)
    if parameters:
        inject_parameters(nb, parameters)
    workdir = Path(cwd) if cwd else path.resolve().parent
    with kernel_spec(kernel_dir, python) as spec_root:

        class KernelManager(AsyncKernelManager):
            """Finds the kernelspec in spec_root only; nbclient owns it (and shuts the
            kernel down)."""

            @default("kernel_spec_manager")
            def _kernel_spec_manager_default(self):
                return KernelSpecManager(kernel_dirs=[str(spec_root)])

        client = NotebookClient(nb, kernel_manager_class=KernelManager,
                                kernel_name=KERNEL_NAME, timeout=int(timeout),
                                resources={"metadata": {"path": str(workdir)}},
                                allow_errors=False)
        try:
            client.execute()
        except CellExecutionError as exc:
            if output:
                Path(output).parent.mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, str(output))
            raise NotebookFailed(f"{path.name}: {_first_line(exc)}", nb) from None
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(output))
    return nb


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else type(exc).__name__


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m triple_py.bench.notebook NOTEBOOK [-p NAME VALUE]... [-o OUT]``."""
    parser = argparse.ArgumentParser(
        prog="python -m triple_py.bench.notebook",
        description="Execute an analysis notebook with parameters (papermill-style).")
    parser.add_argument("notebook", type=Path)
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[],
                        metavar=("NAME", "VALUE"),
                        help="a parameter; VALUE is read as a Python literal when it is "
                             "one (3, True, 'x'), otherwise as a string")
    parser.add_argument("-o", "--output", type=Path, help="write the executed notebook here")
    parser.add_argument("--cwd", type=Path, help="kernel working directory")
    parser.add_argument("--timeout", type=float, default=600.0, help="per cell (600 s)")
    args = parser.parse_args(argv)
    params = {}
    for name, value in args.parameter:
        try:
            params[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            params[name] = value
    try:
        run_notebook(args.notebook, params, args.output, args.cwd, args.timeout)
    except NotebookFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"executed {args.notebook}" + (f" -> {args.output}" if args.output else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
