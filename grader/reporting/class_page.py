"""The class report as one self-contained HTML page: no network, no scripts, charts drawn as inline SVG.

Every chart has a text alternative (its title and description) and a table beside it with the same
numbers; colours keep a contrast ratio above 4.5:1 on white, and the page prints on paper without its
navigation. Each bar carries its number as ``data-value``, so that a test can read the charts back
and compare them with ``--format json``. A chart's text is the body's size (a chart is drawn at its
own size, never scaled down), the histogram's bars are labelled by the range of scores each holds
(full marks in a bar of their own), and points not attempted (a stub, or nothing handed in) are drawn
and counted apart from points lost to mistakes.
"""
from __future__ import annotations

from html import escape

_OUTCOME_WORDS = {"full": "full marks", "partial": "partial", "zero": "zero", "not_attempted": "not attempted",
                  "timeout": "timed out", "error": "error", "grader_error": "grader error"}
STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1a1a1a;margin:0 auto;max-width:70rem;
padding:1rem 1.5rem}
h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ccc}
h3{font-size:1.05rem}
nav a{margin-right:1rem}table{border-collapse:collapse;margin:.5rem 0}
th,td{padding:.2rem .6rem;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem;align-items:flex-start}
svg text{font-size:inherit;fill:#1a1a1a}.bar{fill:#1f5f99}.bar.hot{fill:#a3341b}.bar.idle{fill:#6b6b6b}
.key{display:inline-block;width:.8em;height:.8em;margin:0 .3em 0 .8em;vertical-align:-.05em}
.key.hot{background:#a3341b}.key.idle{background:#6b6b6b}
pre{background:#f6f6f6;padding:.6rem;overflow-x:auto;font-size:12px;line-height:1.3}
details{margin:.3rem 0}summary{cursor:pointer}.muted{color:#555}
@media print{nav{display:none}details{break-inside:avoid}details:not([open]) pre{display:none}
body{max-width:none;font-size:11pt}}
"""


INLINE_LIMIT = 3_000_000  # characters of students' feedback kept in the page itself; more go in a companion


def page(summary: dict, students_href: str | None = None) -> str:
    """The report; each student's feedback in the page, or with ``students_href`` in that companion page
    (:func:`students_page`), which the page links to."""
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
             f"<title>What the class got wrong</title><style>{STYLE}</style></head><body>",
             f"<h1>What the class got wrong</h1><p class=\"muted\">{summary['students']} students; "
             f"{_run_line(summary['run'])}</p>",
             "<nav><a href=\"#assignments\">Assignments</a><a href=\"#teach\">What to teach again</a>"
             "<a href=\"#help\">Who needs help</a><a href=\"#run\">The run</a><a href=\"#students\">Each student</a></nav>"]
    parts.append("<h2 id=\"assignments\">Assignments</h2>")
    for assignment in summary["assignments"]:
        parts.append(_assignment(assignment))
    parts.append(_teach(summary["misconceptions"]))
    anchors = _anchors(summary["feedback"])
    parts.append(_help(summary["help"], students_href or "", anchors))
    parts.append(_run(summary["run"], students_href or "", anchors))
    if students_href is None:
        parts.append(_students(summary["feedback"]))
    else:
        parts.append(f"<h2 id=\"students\">Each student</h2><p>As <code>grade check</code> showed it, in "
                     f"<a href=\"{escape(students_href, quote=True)}\">{escape(students_href)}</a> "
                     f"({len(summary['feedback'])} students).</p>")
    parts.append("</body></html>\n")
    return "".join(parts)


def students_page(summary: dict) -> str:
    """Every student's feedback, as ``grade check`` showed it: the report's companion for a large class."""
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Each student's feedback"
            f"</title><style>{STYLE}</style></head><body><h1>Each student's feedback</h1>"
            f"{_students(summary['feedback'])}</body></html>\n")


def fits_inline(summary: dict) -> bool:
    return sum(len(entry["text"]) for entry in summary["feedback"]) <= INLINE_LIMIT


def _run_line(run: dict) -> str:
    seeds = ", ".join(str(s) for s in run["seeds"][:3]) or "none"
    seeds += f" and {len(run['seeds']) - 3} more" if len(run["seeds"]) > 3 else ""
    return (f"seed {escape(seeds)}, isolation {escape(', '.join(run['isolation']) or 'unknown')}, "
            f"median {run['median_duration_s']:g} s per submission")


def _assignment(a: dict) -> str:
    anchor = f"a-{escape(a['id'])}"
    top, outcomes = a["max_score"], list(a["counts"])  # as grader.reporting.class_report made them
    chart = _bars(f"hist-{a['id']}", f"Scores in {a['id']}",
                  f"How many of {a['students']} students scored in each range of points out of {top:g} "
                  f"(full marks in a bar of their own); median {a['median']:g}.",
                  a["bins"], a["histogram"], vertical=True)
    counts = "".join(f"<tr><td>{_OUTCOME_WORDS[k]}</td><td class=\"n\">{a['counts'][k]}</td></tr>" for k in outcomes)
    rows = "".join(
        f"<tr><td>{escape(e['name'])}</td><td class=\"n\">{e['points']:g}</td><td class=\"n\">{e['mean']:g}</td>"
        f"<td class=\"n\">{e['points_lost']:g}</td><td class=\"n\">{e.get('points_not_attempted', 0):g}</td>"
        + "".join(f"<td class=\"n\">{e['counts'][k]}</td>" for k in outcomes) + "</tr>" for e in a["exercises"])
    head = "".join(f"<th class=\"n\">{_OUTCOME_WORDS[k]}</th>" for k in outcomes)
    return (f"<section id=\"{anchor}\"><h3>{escape(a['id'])}: median {a['median']:g}/{top:g} "
            f"({a['students']} students{_not_graded(a)})</h3><div class=\"charts\">{chart}"
            f"<table><caption class=\"muted\">Students by outcome</caption>{counts}</table></div>"
            f"{_missed_chart(a)}"
            f"<table><thead><tr><th>exercise</th><th class=\"n\">points</th><th class=\"n\">mean</th>"
            f"<th class=\"n\">points lost to mistakes</th><th class=\"n\">points not attempted</th>{head}</tr>"
            f"</thead><tbody>{rows}</tbody></table></section>")


_MISSED = (("points_lost", "hot", "lost to mistakes"), ("points_not_attempted", "idle", "not attempted"))


def _missed_chart(a: dict) -> str:
    """The points each exercise missed, a bar of two parts: lost to mistakes, then not attempted (a
    stub, or nothing handed in), each its own colour and its own number, never added into one."""
    exercises = a["exercises"]
    largest = max((e["points_lost"] + e.get("points_not_attempted", 0) for e in exercises), default=0) or 1
    left = _text_width(e["name"] for e in exercises)
    key = escape(f"missed-{a['id']}", quote=True)
    shapes = []
    for i, e in enumerate(exercises):
        y, x = 12 + 28 * i, left + 6
        shapes.append(f"<text x=\"{left}\" y=\"{y + 15}\" text-anchor=\"end\">{escape(e['name'])}</text>")
        said = []
        for field, kind, words in _MISSED:
            value = e.get(field, 0)
            w = 300 * value / largest
            shapes.append(f"<rect class=\"bar {kind}\" x=\"{x:.1f}\" y=\"{y}\" width=\"{w:.1f}\" height=\"20\" "
                          f"data-label=\"{escape(e['name'], quote=True)}\" data-kind=\"{kind}\" "
                          f"data-value=\"{value:g}\"><title>{escape(e['name'])}: {value:g} points {words}</title></rect>")
            x += w
            said.append(f"{value:g}")
        shapes.append(f"<text x=\"{x + 4:.1f}\" y=\"{y + 15}\">{' + '.join(said)}</text>")
    width, height = left + 6 + 300 + 90, 24 + 28 * len(exercises)
    title = f"Points missed in each exercise of {a['id']}"
    description = ("The points each exercise missed across the class: lost to mistakes (first, red), then not "
                   "attempted (second, grey), each with its own number.")
    return (f"<figure><svg id=\"{key}\" class=\"chart\" role=\"img\" aria-labelledby=\"{key}-t {key}-d\" "
            f"width=\"{width:.0f}\" height=\"{height}\" viewBox=\"0 0 {width:.0f} {height}\" "
            f"xmlns=\"http://www.w3.org/2000/svg\"><title id=\"{key}-t\">{escape(title)}</title>"
            f"<desc id=\"{key}-d\">{escape(description)}</desc>{''.join(shapes)}</svg>"
            f"<figcaption class=\"muted\">Points missed:<span class=\"key hot\"></span>lost to mistakes"
            f"<span class=\"key idle\"></span>not attempted (a stub, or nothing handed in)</figcaption></figure>")


def _text_width(labels) -> float:
    """About how wide the longest of ``labels`` is drawn at the body's size (15 px: 9 px a character)."""
    return 9 * max((len(label) for label in labels), default=1) + 8


def _teach(misconceptions: list[dict]) -> str:
    if not misconceptions:
        return "<h2 id=\"teach\">What to teach again</h2><p>No misconception was named.</p>"
    top = misconceptions[:15]
    chart = _bars("misconceptions", "Points lost by misconception",
                  "The misconceptions the grader named, ranked by the points they cost the whole class.",
                  [m["id"] for m in top], [m["points_lost"] for m in top], vertical=False)
    rows = "".join(
        f"<tr><td><code>{escape(m['id'])}</code></td><td class=\"n\">{m['points_lost']:g}</td>"
        f"<td class=\"n\">{m['students']}</td>"
        f"<td>{_where(m['exercises'])}</td>"
        f"<td>{escape(m['explanation'])}<br><span class=\"muted\">{escape(m['hint'])}</span></td></tr>"
        for m in misconceptions)
    return (f"<h2 id=\"teach\">What to teach again</h2><div class=\"charts\">{chart}</div>"
            f"<table><thead><tr><th>misconception</th><th class=\"n\">points lost</th><th class=\"n\">students</th>"
            f"<th>exercises</th><th>what it is, and where the lesson shows it</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{_pictures(misconceptions)}")


def _pictures(misconceptions: list[dict]) -> str:
    """For each misconception with a figure: a typical student's output beside the right one, on the
    lesson's data (grader/grading/pictures.py), each cell's number in ``data-value`` as in the JSON."""
    from grader.reporting.figures import svg, valid_figure

    drawn = []
    for m in misconceptions:
        figure = m.get("figure")
        if not valid_figure(figure):
            continue
        more = figure.get("students_alike", 1) - 1
        caption = (f"{m['id']}: {figure.get('student', 'a student')}'s {figure.get('exercise', '')}"
                   + (f" ({more} more gave the same)" if more > 0 else ""))
        drawn.append(f"<h3 id=\"look-{escape(m['id'], quote=True)}\"><code>{escape(m['id'])}</code></h3>"
                     + svg(figure, f"figure-{m['id']}", caption))
    if not drawn:
        return ""
    return ("<h3>What each misconception looks like</h3><p class=\"muted\">A typical student's output beside the "
            "right one, on the lesson's data; the entries that differ are outlined in red.</p>" + "".join(drawn))


def _where(exercises: list[dict]) -> str:
    return ", ".join(f"{escape(e['exercise'])} ({e['students']})" for e in exercises)


def _help(rows: list[dict], href: str, anchors: dict[str, str]) -> str:
    if not rows:
        return "<h2 id=\"help\">Who needs help</h2><p>Nobody at 0, stubbed, crashed or timed out.</p>"
    items = "".join(f"<tr><td>{_link(r['student'], href, anchors)}</td>"
                    f"<td class=\"n\">{r['score']:g}/{r['max_score']:g}</td><td>{escape(r['what'])}</td></tr>"
                    for r in rows)
    return (f"<h2 id=\"help\">Who needs help</h2><table><thead><tr><th>student</th><th class=\"n\">score</th>"
            f"<th>what happened</th></tr></thead><tbody>{items}</tbody></table>")


def _run(run: dict, href: str, anchors: dict[str, str]) -> str:
    slow = "".join(f"<tr><td>{_link(s['student'], href, anchors)}</td>"
                   f"<td class=\"n\">{s['duration_s']:g} s</td></tr>" for s in run["slowest"])
    return (f"<h2 id=\"run\">The run</h2><p>{_run_line(run)}; devices {escape(', '.join(run['devices']))}.</p>"
            f"<table><caption class=\"muted\">Slowest submissions</caption>{slow}</table>")


def _students(feedback: list[dict]) -> str:
    parts = ["<h2 id=\"students\">Each student, as <code>grade check</code> showed it</h2>"]
    for index, entry in enumerate(feedback):
        parts.append(f"<details id=\"{_anchor(index, entry['student'])}\"><summary>{escape(entry['student'])}: "
                     f"{entry['score']:g}/{entry['max_score']:g}</summary><pre>{escape(entry['text'])}</pre></details>")
    return "".join(parts)


def _anchors(feedback: list[dict]) -> dict[str, str]:
    """Each student's anchor, by name: unique whatever the names (``a b`` and ``a_b``, ``Ab`` and
    ``ab``), so that a link never opens another student's feedback. The report and its companion
    page make the same ones from the same list."""
    found: dict[str, str] = {}
    for index, entry in enumerate(feedback):
        found.setdefault(entry["student"], _anchor(index, entry["student"]))
    return found


def _anchor(index: int, name: str) -> str:
    """The anchor of the ``index``-th student's feedback: its place makes it unique, its name's letters
    and digits readable."""
    return f"s{index}-" + "".join(c for c in name if c.isascii() and (c.isalnum() or c in "-_"))[:40]


def _link(student: str, href: str, anchors: dict[str, str]) -> str:
    target = anchors.get(student)
    if target is None:
        return escape(student)
    return f"<a href=\"{escape(href, quote=True)}#{target}\">{escape(student)}</a>"


def _bars(ident: str, title: str, description: str, labels: list[str], values: list[float], *, vertical: bool) -> str:
    """A bar chart in SVG, with a title and a description for screen readers; each bar's number in
    ``data-value`` and its label in ``data-label``."""
    largest = max(values, default=0) or 1
    key = escape(ident, quote=True)
    shapes = []
    step = max(34.0, _text_width(labels))  # a column per label, as wide as its label at the body's size
    left = _text_width(labels)  # a row's label, right-aligned before its bar
    for i, (label, value) in enumerate(zip(labels, values)):
        size = (130 if vertical else 300) * value / largest
        if vertical:  # a column per label, its number above it and its label, the range it holds, below
            x, y, w, h, kind = 24 + step * i, 170 - size, step - 8, size, "bar"
            before = ""
            after = (f"<text x=\"{x + w / 2:.1f}\" y=\"{y - 5:.1f}\" text-anchor=\"middle\">{value:g}</text>"
                     f"<text x=\"{x + w / 2:.1f}\" y=\"190\" text-anchor=\"middle\">{escape(label)}</text>")
        else:  # a row per label, its label on the left and its number at its end
            x, y, w, h, kind = left + 6, 12 + 28 * i, size, 20, "bar hot"
            before = f"<text x=\"{left:.1f}\" y=\"{y + 15}\" text-anchor=\"end\">{escape(label)}</text>"
            after = f"<text x=\"{x + w + 4:.1f}\" y=\"{y + 15}\">{value:g}</text>"
        shapes.append(f"{before}<rect class=\"{kind}\" x=\"{x:.1f}\" y=\"{y:.1f}\" width=\"{w:.1f}\" height=\"{h:.1f}\" "
                      f"data-label=\"{escape(label, quote=True)}\" data-value=\"{value:g}\"><title>{escape(label)}: "
                      f"{value:g}</title></rect>{after}")
    width, height = (round(32 + step * len(values)), 200) if vertical else (round(left + 6 + 300 + 70),
                                                                            24 + 28 * len(values))
    return (f"<svg id=\"{key}\" class=\"chart\" role=\"img\" aria-labelledby=\"{key}-t {key}-d\" width=\"{width}\" "
            f"height=\"{height}\" viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">"
            f"<title id=\"{key}-t\">{escape(title)}</title><desc id=\"{key}-d\">{escape(description)}</desc>"
            f"{''.join(shapes)}</svg>")


def _not_graded(assignment: dict) -> str:
    """", and N not graded": the submissions that could not be read, left out of the numbers."""
    count = assignment.get("not_graded", 0)
    return f", and {count} not graded: their submission could not be read" if count else ""
