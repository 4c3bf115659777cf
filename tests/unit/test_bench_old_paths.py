"""The former module paths of triple_py.bench keep working for one release: every module the
package had before it was built in floors still imports, with every public name it had
(its ``__all__`` then), and the two that ran with ``python -m`` still run."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

OLD_MODULES = {
    "arms": ("ArmKind", "KINDS", "ALIASES", "kind_of", "canonical_mode", "run_spec"),
    "arms_grpcio": ("grpcio_sync_unary", "grpcio_aio_unary", "grpcio_aio_bidi",
        "run_threads", "aio_window", "aio_unary", "channel_options", "JOIN_GRACE"),
    "arms_h2load": ("h2load", "h2load_command", "request_headers", "parse_h2load_output",
        "parse_h2load_log", "h2load_ms", "H2loadSummary"),
    "arms_triple_py": ("triple_py_sync_unary", "triple_py_aio_unary", "triple_py_bidi",
        "DEFAULT_STREAM_THREADS", "split"),
    "call_setup": ("TlsOptions", "CallSetup", "PreparedCall"),
    "capacity": ("Slo", "Probe", "CapacityResult", "parse_slo", "histogram_percentile",
        "find_capacity", "capacity_text", "capacity_plot"),
    "dask_tasks": ("build_identity", "wall_clock_ns", "run_share", "stop_share"),
    "descriptor_repair": ("repair_map_entries", "map_entry_name"),
    "distributed": ("connect", "run", "run_spec", "run_parts", "run_matrix", "runner",
        "split", "Share", "WorkersFailed", "WorkerFailure", "check_builds", "clock_offset",
        "worker_addresses", "DEFAULT_LEAD"),
    "environment": ("environment", "cpu_model", "git_commit", "nghttp2_version",
        "openssl_version"),
    "errors": ("BenchError", "ConfigError", "TargetError", "RunFailed"),
    "harness": ("ArmRun", "MatrixRun", "run_matrix", "single_run", "Runner"),
    "html_report": ("run_html", "matrix_html"),
    "html_tables": ("html_table", "bench_result_html", "results_html", "benchstat_html",
        "dataclass_rows_html", "VERDICT_STYLE"),
    "interrupts": ("Interrupted", "signals_interrupt", "signal_of", "exit_code", "mark",
        "raise_if_marked", "loop_signals", "STOP_SIGNALS"),
    "live": ("NotebookProgress", "auto_progress", "in_notebook", "LIVE_CSS_CLASS"),
    "loadgen": ("C_MODES", "run_c_load", "run_c_spec", "result_from_load"),
    "matrix": ("Matrix", "ArmSpec", "Scenario", "BUILTIN", "load_matrix", "parse_matrix",
        "round_order", "AXES"),
    "matrix_capacity": ("CapacitySpec", "CapacityRun", "parse_capacity", "run_capacity",
        "format_capacities", "write_capacities"),
    "merge": ("Part", "merge_histograms", "merge_latency", "merge_series", "merge_parts",
        "worker_row", "imbalance"),
    "messages": ("BENCHMARK_SERVICE", "UNARY_METHOD", "STREAM_METHOD", "encode_payload",
        "benchmark_request", "grpc_frame", "normalize_method"),
    "metrics_formats": ("prometheus_text", "influx_summary", "influx_details"),
    "notebook": ("run_notebook", "inject_parameters", "kernel_spec", "KERNEL_NAME",
        "NotebookFailed"),
    "notebook_server": ("NotebookServer", "register_kernel", "kernel_display_name",
        "remove_stale_scratch", "main"),
    "paired": ("PairedRatio", "signed_rank_p", "walsh_interval", "rounds_needed",
        "compare_pairs", "compare_rounds", "paired_ratios", "headline_ratios",
        "format_paired", "format_verdicts", "PAIRED_COLUMNS"),
    "plots": ("arm_colors", "save", "standard", "grouped_bars", "line_vs", "latency_cdf",
        "percentile_spectrum", "timeseries", "throughput_latency", "errors",
        "SPECTRUM_TICKS"),
    "progress": ("Progress", "progress_enabled"),
    "recorders": ("WARMUP", "MEASURE", "STOP", "Recorder", "StreamRecorder", "describe",
        "status_of", "percentile", "process_cpu", "thread_window", "sleep_in_slices",
        "STOP_GRACE", "SLICE"),
    "reflection": ("REFLECTION_SERVICES", "method_by_reflection"),
    "report": ("CSV_COLUMNS", "ArmSummary", "summarize", "format_scenario_table",
        "format_summary", "unit_values", "go_line", "go_bench_text", "go_header",
        "csv_rows", "write_csv", "write_paired_csv", "results_doc", "write_results",
        "comparison", "format_run_summary", "NOTE_FEW_ROUNDS"),
    "request_data": ("RequestData", "RingEntry", "DEFAULT_RING_SIZE", "request_data",
        "build_ring"),
    "request_metadata": ("MetadataTemplate", "parse_metadata", "render_metadata"),
    "result": ("Latency", "BenchResult", "STATUS_NAMES", "status_name",
        "histogram_from_samples", "series_from_completions"),
    "results": ("Results", "load_results", "results_from_document", "RUN_COLUMNS",
        "SUCCESS_CODES", "percentile_spectrum", "interval", "higher_is_better",
        "significant_changes", "conclusions"),
    "runner": ("run", "spec_of", "spec_target", "preflight", "check_result",
        "target_or_embedded"),
    "schedules": ("Schedule", "KINDS"),
    "schema": ("MethodSchema", "message_class", "compile_proto", "read_protoset", "pool_of",
        "find_method", "benchmark_schema"),
    "server_cpu": ("ServerProcess", "Served", "unpack_served", "process_cpu_seconds",
        "book_server_cpu"),
    "spec": ("RunSpec", "WIRES", "WRITE_BUFFER_SIZE", "WRITE_BUFFER_DELAY_US", "load_limit",
        "option_range"),
    "standard_figures": ("as_results", "draw_standard", "MATRIX_FIGURES", "RUN_FIGURES"),
    "target": ("split_target", "check_target", "target_endpoints", "embedded_server",
        "ServerFactory", "fixed_target"),
    "template": ("CallContext", "Template", "parse_template"),
    "units": ("parse_size", "format_size", "parse_duration", "MAX_PAYLOAD"),
    "views": ("Comparison", "PairedTable"),
    "workers_view": ("worker_rows", "format_workers", "format_failed_run", "workers_frame",
        "plot_workers"),
}

@pytest.mark.parametrize("module", sorted(OLD_MODULES))
def test_old_module_path_keeps_its_names(module: str) -> None:
    mod = importlib.import_module(f"triple_py.bench.{module}")
    missing = [name for name in OLD_MODULES[module] if not hasattr(mod, name)]
    assert not missing, f"triple_py.bench.{module} lost {missing}"


def test_the_facade_keeps_its_names() -> None:
    import triple_py.bench as bench

    for name in bench.__all__:
        assert getattr(bench, name) is not None, name
    assert callable(bench.run) and bench.plots.standard and bench.Results.__name__ == "Results"


def test_arm_kinds_keep_their_attributes() -> None:
    from triple_py.bench import KINDS, kind_of
    from triple_py.bench.arms import RUNNERS

    for name, kind in KINDS.items():
        assert (kind.name, kind.description) == (name, kind.description) and kind.description
        assert isinstance(kind.streaming, bool) and isinstance(kind.open_loop, bool)
        assert isinstance(kind.count, bool) and isinstance(kind.ours, bool) and kind.wires
        assert kind.runner is RUNNERS[name]  # still reachable from the kind
    assert kind_of("unary") is KINDS["fastpath"]


@pytest.mark.parametrize("module", ["notebook", "notebook_server"])
def test_old_python_dash_m_paths_run(module: str) -> None:
    proc = subprocess.run([sys.executable, "-m", f"triple_py.bench.{module}", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:"), proc.stdout
