"""The listening panel: people answer a judge's rubric questions by listening, so that the
judge card can say how often the judge agrees with them (the judge card's human block)."""
