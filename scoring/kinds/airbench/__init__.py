"""AIR-Bench's two tracks: the rules of both (`rules`), what they share as kinds (`base`), the
foundation track (`foundation`, multiple choice read by rule or aligned by the judge), the chat
track (`chat`, answers scored 1-10 by the judge against a reference) and the simulator's replies
(`simulated`)."""

from scoring.kinds.airbench.chat import Chat
from scoring.kinds.airbench.foundation import Foundation

KINDS = (Foundation(), Chat())
