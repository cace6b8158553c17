"""Instructions sent to the summarising model (compaction.md §6.1–§6.3, §9.2).

The wording is pi_lab's own; the section headings and their order follow pi 1.6.0, because
later turns (and people reading the session file) rely on that structure.
"""

from __future__ import annotations

__all__ = [
    "SUMMARIZATION_SYSTEM_PROMPT",
    "SUMMARIZATION_PROMPT",
    "UPDATE_SUMMARIZATION_PROMPT",
    "TURN_PREFIX_SUMMARIZATION_PROMPT",
    "BRANCH_SUMMARY_PROMPT",
    "BRANCH_SUMMARY_PREAMBLE",
    "NO_PRIOR_HISTORY",
    "SPLIT_TURN_SEPARATOR",
    "NO_CONTENT_TO_SUMMARIZE",
    "ADDITIONAL_FOCUS",
]

SUMMARIZATION_SYSTEM_PROMPT = (
    "You summarise context. You will be shown a conversation between a user and an AI "
    "assistant, and your job is to turn it into a structured summary in exactly the format "
    "you are asked for.\n\n"
    "Do not carry the conversation on and do not answer anything asked inside it. Reply "
    "with the structured summary and nothing else."
)

_CLOSING = "Be brief in every section, but keep file paths, function names and error messages exactly as written."

SUMMARIZATION_PROMPT = f"""Everything above is a conversation that needs summarising. Write a structured checkpoint of it; a different LLM will read this checkpoint and pick the work up from there.

Use this EXACT format:

## Goal
[The outcome the user is working towards. List several if the session covers more than one task.]

## Constraints & Preferences
- [Requirements, limits or preferences the user has stated]
- [Write "(none)" if there were none]

## Progress
### Done
- [x] [Work that is finished]

### In Progress
- [ ] [Work currently under way]

### Blocked
- [Anything stopping progress, if there is something]

## Key Decisions
- **[Decision]**: [Short reason for it]

## Next Steps
1. [What to do next, in order]

## Critical Context
- [Data, examples or references that are needed to carry on]
- [Write "(none)" if nothing applies]

{_CLOSING}"""

UPDATE_SUMMARIZATION_PROMPT = f"""The messages above are NEW messages from the conversation. Fold them into the summary that already exists, which is given in the <previous-summary> tags.

Bring the existing structured summary up to date with the new information. RULES:
- KEEP everything the previous summary says unless it has become irrelevant
- ADD the progress, decisions and context found in the new messages
- UPDATE Progress: an item from "In Progress" that is now finished moves to "Done"
- UPDATE "Next Steps" to reflect what has been achieved
- KEEP file paths, function names and error messages exactly as written
- Anything that no longer matters may be dropped

Use this EXACT format:

## Goal
[The existing goals, plus any new ones if the task has grown]

## Constraints & Preferences
- [The existing ones, plus any newly stated]

## Progress
### Done
- [x] [Earlier finished items together with the newly finished ones]

### In Progress
- [ ] [Work currently under way, revised to match the progress made]

### Blocked
- [Blockers that still apply; drop the ones that were resolved]

## Key Decisions
- **[Decision]**: [Short reason for it] (keep every earlier decision)

## Next Steps
1. [What to do next, in order, revised]

## Critical Context
- [Data, examples or references that are needed to carry on; keep the earlier ones that still matter]

{_CLOSING}"""

TURN_PREFIX_SUMMARIZATION_PROMPT = """The messages above are the earlier part of a conversation that is still going on. Its later messages are kept separately and word for word; do not try to reconstruct them.

Write a short checkpoint of what the user asked for and of the progress visible above. It will be placed in front of the later messages so that they can be understood.

Use this EXACT format:

## Original Request
[What the user asked for in this turn]

## Progress So Far
- [Steps already taken and what they produced]

## Context Needed to Continue
- [Facts, file contents, results or decisions the later messages depend on]

Only summarise what the messages above state explicitly. Do not guess at, infer or recreate the later messages."""

BRANCH_SUMMARY_PROMPT = f"""Write a structured summary of this branch of the conversation, so that its context is available when the user comes back to it later.

Use this EXACT format:

## Goal
[What the user was trying to achieve on this branch]

## Constraints & Preferences
- [Requirements, limits or preferences that were stated]
- [Write "(none)" if there were none]

## Progress
### Done
- [x] [Work that was finished]

### In Progress
- [ ] [Work that was begun but not finished]

### Blocked
- [Anything that stopped progress, if there was something]

## Key Decisions
- **[Decision]**: [Short reason for it]

## Next Steps
1. [What should happen next to carry this work on]

{_CLOSING}"""

# Exact strings that end up in session files and model context (pi 1.6.0).
BRANCH_SUMMARY_PREAMBLE = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
NO_PRIOR_HISTORY = "No prior history."
SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"
NO_CONTENT_TO_SUMMARIZE = "No content to summarize"
ADDITIONAL_FOCUS = "\n\nAdditional focus: "
