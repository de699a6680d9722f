"""The listening panel and the judge card: people answer a judge's rubric questions as the judge
is asked them, so that the judge card can say how often the judge agrees with them (its human
block), beside the judge's own checks. Above `leaderboard`: it reads boards, never the reverse.

`assignment` hands a rater their next task, `services` shows it, sends its audio and takes its
answer, `pool` draws from the pool whose results public pages withhold (submissions.withheld)
and releases what was rated, `agreement` counts the figures (plain Python), `judge_card` and
`item_verdicts` read them for the pages and the API (`views`, `api`)."""
