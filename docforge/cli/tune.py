"""`docforge tune`: refit the extractive answerer's parameters on your own labelled questions."""

from __future__ import annotations

import json
from pathlib import Path

import click

from docforge.cli.options import config_option


@click.command("tune")
@click.argument("questions", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@config_option
@click.option(
    "--out",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where the parameters go (default: answer-params.json in DOCFORGE_HOME).",
)
def command(questions: Path, config: str, out: Path | None) -> None:
    """Fit the extractive answerer's weights, abstention threshold and confidence on QUESTIONS.

    \b
    QUESTIONS is JSON lines, one question each, asked of the indexed store:
      {"question": "Which port does the proxy listen on?", "phrases": ["8443"]}
      {"question": "How do I reset my VPN token?", "phrases": null}
    "phrases": short texts one of which a right answer holds (copy them from
    the page that answers it); null for a question the documentation does
    not answer. A few dozen of each kind is enough to start; more is better.
    Then point `answers: {params: FILE}` in sources.yml at the file written.
    """
    from pipeline.answers import Answerer, fit, params
    from pipeline.config import load_settings

    settings = load_settings(config)
    rows = fit.read_questions(questions)
    with Answerer(settings, llm=None) as answerer:
        shipped = answerer.params()
        click.echo(f"asking {len(rows)} questions of the index…", err=True)
        asked = fit.ask(answerer, "yours", rows, fit.prior(shipped.kinds))
    raw = fit.fit(asked, shipped.kinds, settings.answers.extractive_sentences)
    path = out or Path(settings.home) / "answer-params.json"
    params.write(path, raw)
    f = raw["fitted"]
    click.echo(
        f"wrote {path}\n"
        f"  {f['answerable']} answerable questions, {f['unanswerable']} not; "
        f"{f['answer_holds_phrase']} of {f['answered']} answered hold a phrase\n"
        f"  unanswerable ones abstained: {f['unanswerable_abstained']} of {f['unanswerable']}\n"
        f"next: set `answers: {{params: {json.dumps(str(path))}}}` in sources.yml"
    )
