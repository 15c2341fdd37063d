"""U5 from ``anyy chat --attach``: a text file and a PDF reach the model (the offline model of a real
Gateway process quotes what it received), and an image for a model that reads text only is refused when it
is sent, with the reason and what to do, nothing stored in the session."""

from __future__ import annotations

from pathlib import Path

from tests.cli.live import StartGateway, chat_json, run, start_gateway
from tests.fakes.pdf import make_pdf

__all__ = ["start_gateway"]


def test_u5_chat_attach_gives_a_text_file_and_a_pdf_to_the_model(
    start_gateway: StartGateway, home: Path, tmp_path: Path
) -> None:
    start_gateway()
    note = tmp_path / "notes.txt"
    note.write_bytes(b"remember the milk\n")
    code, record, err = chat_json(home, "--attach", str(note), "file?")
    assert code == 0, err
    assert '[Attached file "notes.txt" (text file, 18 bytes).' in record["response"]
    assert "remember the milk" in record["response"]

    pdf = tmp_path / "invoice.pdf"
    pdf.write_bytes(make_pdf(["Total due 42 EUR"]))
    code, record, err = chat_json(home, "--attach", str(pdf), "pdf?")
    assert code == 0, err
    assert "--- page 1 of 1 --- Total due 42 EUR" in record["response"]


def test_u5_chat_refuses_an_image_for_a_text_only_model_before_sending(
    start_gateway: StartGateway, home: Path, tmp_path: Path
) -> None:
    live = start_gateway()
    image = tmp_path / "chart.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(32)))
    done = run(home, "chat", "--attach", str(image), "what is in the chart?")
    assert done.returncode != 0
    assert "reads text only and cannot take the image chart.png: nothing was sent" in done.stderr
    assert "switch to a model that reads images" in done.stderr
    assert "Traceback" not in done.stderr
    with live.client() as client:
        assert client.call("session.list", {})["items"] == []  # no session was left holding it
