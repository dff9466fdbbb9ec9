"""Injection patterns: what each finding looks like, in which reading, and its needles.

Each entry is (finding, reading, pattern, needles). `reading` is "skeleton" for English and the
other Latin-script languages (accents dropped there, so the patterns are written without them)
and "normal" for Chinese, Japanese and Russian. Every match of a pattern contains one of its
needles, so a text holding none of them is not searched: a substring test costs tens of
nanoseconds, a search several microseconds. tests/unit/governance/screening holds each needle
set to its pattern over the labelled set and fuzzed texts.

Pure data; written for tests/data/screening/dev.yaml only (held_out.yaml measures).
"""

from __future__ import annotations

import re
from typing import Final, Literal

Reading = Literal["normal", "skeleton"]

# English: a verb that sets instructions aside, what it sets aside, and the instructions.
_SET_ASIDE = (
    r"(ignore|ignoring|disregard|forget|override|drop|discard|abandon|bypass|skip|cancel|neglect"
    r"|set aside|put aside|leave aside|pay no attention to|stop following|nevermind|never mind"
    r"|reset|throw out|(do not|don't|dont|no longer) (follow|obey|listen to|apply))"
)
# The verbs that only ever set instructions aside: "drop the previous filters", "skip the
# current task" and "cancel the existing rules" are a customer's words about their own things.
_STRONG_SET_ASIDE = (
    r"(ignore|ignoring|disregard|forget|override|discard|abandon|bypass|neglect|set aside"
    r"|put aside|pay no attention to|stop following|(do not|don't|dont|no longer) (follow|obey))"
)
# Between the verb and the instructions: not the customer's own ("my earlier instructions about
# delivery"), not instructions about a delivery, an order or a device.
_GAP_WORDS = (
    r"my|our|his|her|their|delivery|shipping|courier|parcel|package|order|return|returns|washing"
    r"|care|assembly|installation|email|forwarding|cooking|recipe|driver|dosage|setup"
)


def _gap(most: int) -> str:
    """Up to `most` characters of one sentence holding none of `_GAP_WORDS`."""
    return rf"(?:(?!\b(?:{_GAP_WORDS})\b)[^.\n]){{0,{most}}}"


# Instructions followed by what they are about, when that is the customer's own.
_NOT_THEIRS = r"(?! (about|on|for|regarding|concerning|of) (my|our)\b)"
_WHOSE = (
    r"(previous|prior|above|earlier|preceding|original|initial|existing|current|your|all|any"
    r"|system|safety|these|those|the (previous|prior|above|earlier|original|system|safety))"
)
_RULES = (
    r"(instructions?|rules|prompts?|guidelines|guidance|directives|directions|restrictions"
    r"|constraints|filters|programming|safety (checks|settings|rules)|policy|policies|task)"
)
# The assistant's own rules, never a customer's: "the previous filters" on an order list, "the
# current task" are not (filters, task and policy count after a verb in `_STRONG_SET_ASIDE`).
_OWN_RULES = (
    r"(instructions?|rules|prompts?|guidelines|guidance|directives|restrictions|constraints"
    r"|programming|safety (checks|settings|rules))"
)
_VOID = (
    r"(no longer apply|do not apply|don't apply|are cancell?ed|are void|are obsolete"
    r"|are revoked|are suspended|have been (updated|replaced|revoked|lifted))"
)
# Said of the instructions the assistant was given (not of "the previous instructions in the
# wiki", which may well be outdated).
_VOID_GIVEN = rf"({_VOID[1:-1]}|(do not|don't|dont|no longer) count|(is|are) (outdated|invalid))"
_SET_ASIDE_NEEDLES = (
    "ignor", "disregard", "forget", "override", "drop", "discard", "abandon", "bypass", "skip",
    "cancel", "neglect", "aside", "pay no attention", "stop following", "never", "reset",
    "throw out", "follow", "obey", "listen to", "apply",
)  # fmt: skip

# "without restrictions" and its kin, in the languages below (accents dropped).
_UNBOUND = (
    r"(unrestricted|uncensored|unfiltered|jailbroken|without (any )?(restrictions|rules|limits"
    r"|filters|safety|content polic\w+)|no (restrictions|rules|limits|filters|content polic\w+)"
    r"|sin (ninguna )?(restricciones|reglas|limites|filtros)"
    r"|sans (aucune )?(restrictions?|regles|limites|filtres)"
    r"|ohne (jegliche )?(einschrankungen|regeln|grenzen|filter)"
    r"|sem (nenhuma )?(restricoes|regras|limites|filtros)"
    r"|senza (alcuna )?(restrizioni|regole|limiti|filtri))"
)
_YOU_ARE = (
    r"(you are|you're|youre|you will be|you will act as|eres|seras|tu es|vous etes|du bist"
    r"|bist du|voce e|voce sera|tu sei|sei)"
)
_YOU_ARE_NEEDLES = (
    "you are", "you're", "youre", "you will", "eres", "seras", "tu es", "vous etes", "du bist",
    "bist du", "voce", "sei",
)  # fmt: skip
# The system prompt, named in each language.
_SYSTEM_PROMPT = (
    r"(system (prompt|message|instructions?)|developer (message|prompt)|hidden (instructions?"
    r"|rules|text|prompt)|initial (instructions?|prompt)|pre-?prompt|(secret|confidential"
    r"|internal) (configuration |system )?(instructions?|prompt|rules)|prompt del sistema"
    r"|instrucciones del sistema|prompt systeme|prompt du systeme|systemprompt|system-prompt"
    r"|systemanweisung\w*|prompt (de|do) sistema|prompt di sistema)"
)
_SHOW = (
    r"(reveal|show|print|output|repeat|display|tell|give|leak|dump|copy|quote|share|write"
    r"|recite|spell out|summari[sz]e|what is|what's|what are|revela|muestra|muestrame|ensename"
    r"|dime|imprime|affiche|montre|revele|donne|gib|zeig|zeige|nenne|verrate|mostre|exiba"
    r"|imprima|mostra|mostrami|stampa|rivela)"
)

# An order to the assistant, or an act only an agent's tools do, after a heading.
_TO_THE_ASSISTANT = (
    r"\b(you|your|assistant|ai|model|agent|bot|llm|ignore|disregard|forget|override|bypass"
    r"|disable|delete|wipe|erase|remove|send|e-?mail|forward|upload|transfer|exfiltrate|grant"
    r"|granted|approve|approved|approvals?|reveal|print|dump|leak|comply|obey|execute|run"
    r"|refund (all|every)|from now on|no longer)\b"
)
_SEND = r"(send|email|e-mail|mail|post|upload|forward|exfiltrate|transmit|leak)"
_SECRETS = (
    r"(passwords?|secrets?|api[ _-]?keys?|credentials?|tokens?|contrasenas?|mots de passe"
    r"|passworter|senhas?|password|keys)"
)
_AUTHORITY = ("system", "admin", "developer", "security", "operator")
_ANNOUNCEMENT = ("override", "update", "notice", "message", "alert")

_SPEC: tuple[tuple[str, Reading, str, tuple[str, ...]], ...] = (
    (
        "ignore_instructions",
        "skeleton",
        rf"\b{_SET_ASIDE}\b{_gap(40)}\b{_WHOSE}\b{_gap(20)}\b{_OWN_RULES}\b{_NOT_THEIRS}"
        rf"|\b{_STRONG_SET_ASIDE}\b{_gap(40)}\b{_WHOSE}\b{_gap(20)}\b{_RULES}\b{_NOT_THEIRS}"
        rf"|\b{_SET_ASIDE}\b{_gap(20)}\b(your|system|safety|content) (filters|task|policy"
        rf"|policies)\b"
        # "the rules" alone is enough after a verb that only ever sets aside ("reset the
        # instructions counter" is a request about a device).
        rf"|\b{_STRONG_SET_ASIDE} the {_RULES}\b{_NOT_THEIRS}"
        rf"|\b{_RULES} (you (received|were given|got|have))\b[^.\n]{{0,20}}\b{_VOID_GIVEN}"
        rf"|\b{_SET_ASIDE}\b{_gap(40)}\b{_OWN_RULES} (above|before|so far|you were given"
        rf"|you have been given|you've been given|you were told)"
        rf"|\b({_STRONG_SET_ASIDE}) (everything|anything|whatever) (you were told"
        rf"|you've been told|you have been told|you (were|have been) (given|instructed))"
        # "Forget everything above, I found the parcel!" is a customer changing their mind:
        # everything above is set aside only when an order to the assistant follows.
        rf"|\b({_STRONG_SET_ASIDE}) (everything|anything|whatever) (above|before|earlier)"
        rf"[.,;:]? (and |then |now |instead |and instead )?(you|your|reveal|print|send|email"
        rf"|delete|tell|show|answer|respond|give|list|do|say|act|follow|obey|from now on|grant"
        rf"|approve|transfer|refund|ignore|write|only|output)\b"
        rf"|\b(this|these|the following) (message|text|instructions?) (supersedes?|overrides?"
        rf"|replaces?) (your|the|all|any)\b[^.\n]{{0,20}}\b{_OWN_RULES}"
        rf"|\b(whatever|regardless of what) (your|the) {_RULES}\b[^.\n]{{0,30}}\b(ignore|disregard)"
        rf"|\b{_WHOSE} {_RULES}\b[^.\n]{{0,40}}\b{_VOID}|\b{_RULES} above {_VOID_GIVEN}",
        (
            *_SET_ASIDE_NEEDLES, "forget", "whatever", "regardless", "no longer apply", "not apply",
            "n't apply", "are cancel", "are void", "are obsolete", "are revoked", "are suspended",
            "have been", "count", "outdated", "invalid", "valid", "supersede", "override",
            "replace",
        ),
    ),
    (
        # The same in Spanish, French, German, Portuguese, Italian, Dutch and Polish.
        "ignore_instructions",
        "skeleton",
        r"\b(ignora|ignore|ignorez|ignores|olvida|olvide|olvidate de|omite|descarta"
        r"|no hagas caso (a|de)|oublie|oubliez|ne tiens pas compte|ne tenez pas compte"
        r"|fais abstraction|faites abstraction|ignorier\w*|vergiss|vergessen sie|missachte\w*"
        r"|uberspring\w*|esqueca|esqueci|desconsidere|despreze|dimentica|dimentichi|trascura"
        r"|non considerare|negeer|vergeet|zignoruj|zapomnij)\b[^.\n]{0,40}"
        r"\b(instrucciones|reglas|indicaciones|normas|directrices|instructions|consignes|regles"
        r"|directives|indications|anweisung\w*|regeln|vorgaben|richtlinien|instruktion\w*"
        r"|instrucoes|regras|diretrizes|orientacoes|istruzioni|regole|indicazioni|direttive"
        r"|instructies|regels|instrukcj\w*|zasady)\b",
        (
            "ignor", "olvid", "omite", "descarta", "no hagas caso", "oubli", "ne tien",
            "ne tenez", "abstraction", "vergiss", "vergessen", "missacht", "uberspring",
            "esquec", "desconsidere", "despreze", "dimentic", "trascura", "non considerare",
            "negeer", "vergeet", "zignoruj", "zapomnij",
        ),
    ),
    (
        "ignore_instructions",
        "normal",
        r"(игнорируй\w*|проигнорируй\w*|забудь\w*|не обращай\w* внимания на|не слушай)"
        r"[^.\n]{0,40}(инструкц\w*|правил\w*|указани\w*|установк\w*)"
        r"|(忽略|无视|無視|忘记|忘掉|不要理会|别管|不要遵守|不再遵守)[^。\n]{0,12}(指令|指示|说明|规则|要求|提示)"
        r"|(指令|指示|命令|ルール|規則)[^。\n]{0,12}(無視|忘れ|忽略)",
        (
            "игнорируй", "проигнорируй", "забудь", "не обращай", "не слушай", "忽略", "无视",
            "無視", "忘记", "忘掉", "不要理会", "别管", "不要遵守", "不再遵守", "指令", "指示",
            "命令", "ルール", "規則",
        ),
    ),
    (
        "role_override",
        "skeleton",
        r"\byou are now (an? |the |in )?(\w+ ){0,2}(admin\w*|root|system|developer|dan|sudo"
        r"|unrestricted|jailbroken|uncensored|evil|hacker|god)\b"
        r"|\b(you're|you are|youre) no longer (an?|the|bound|restricted|limited|required)\b"
        r"|\b(act|behave|respond|answer|operate) as (an? |the )?(\w+ ){0,2}(unrestricted"
        r"|uncensored|unfiltered|jailbroken|evil|admin\w*|root|system|developer|hacker|dan)\b"
        # "act as admin contact for my account" names a role of the customer's account.
        r"(?! (contact|account|user|team|email|address|page|panel|portal|login|number|rights))"
        # Pretending is an order to the assistant ("my son wants to pretend to be ..." is not).
        r"|(^|[.!?;:,] |\bplease |\bnow |\byou (must |should |will |can )?)(pretend|imagine"
        r"|roleplay|role-play|role play)\b[^.\n]{0,40}\b(admin\w*|root"
        rf"|system administrator|developer|sudo|{_UNBOUND})"
        r"|\b(enter|enable|activate|switch to|turn on|go into)\b[^.\n]{0,20}\b(developer|god|dan"
        r"|jailbreak|jailbroken|unrestricted|sudo|admin) mode\b"
        r"|\byou have been (jailbroken|unlocked|freed)\b"
        r"|\byour (new|real|true) (role|identity|persona|purpose) is\b"
        r"|\b(assume|take on|adopt) the (identity|role|persona) of\b"
        r"|\bfrom now on,? you (are (dan|unrestricted|jailbroken)|obey|will obey|answer only to)"
        rf"|\b(from now on|desde ahora|a partir de ahora|desormais|a partir de maintenant"
        rf"|ab jetzt|ab sofort|de agora em diante|a partir de agora|d'ora in poi|d'ora in avanti"
        rf"|da ora in poi)\b[^.\n]{{0,30}}\b{_YOU_ARE}\b[^.\n]{{0,40}}{_UNBOUND}"
        rf"|\b{_YOU_ARE} (an? |un |une |uno |una |um |uma |ein |eine )?(\w+ ){{0,2}}{_UNBOUND}",
        (
            *_YOU_ARE_NEEDLES, "act as", "behave as", "respond as", "answer as", "operate as",
            "pretend", "imagine", "roleplay", "role-play", "role play", " mode", "you have been",
            "your new", "your real", "your true", "the identity of", "the role of",
            "the persona of", "from now on",
        ),
    ),
    (
        "role_override",
        "normal",
        r"(теперь ты|с этого момента ты|отныне ты)[^.\n]{0,40}(без ограничений|без правил"
        r"|администратор|разработчик|dan)|(从现在(开始|起)|今后|此后)[，, ]*你[^。\n]{0,20}"
        r"(没有任何限制|没有限制|不受限制|不受任何限制|管理员|开发者)"
        r"|(今から|これから)[^。\n]{0,20}(制限のない|制限なし)",
        (
            "теперь ты", "с этого момента ты", "отныне ты", "从现在", "今后", "此后", "今から",
            "これから",
        ),
    ),
    (
        "system_prompt",
        "skeleton",
        rf"\b{_SHOW}\b[^.\n]{{0,30}}\b{_SYSTEM_PROMPT}"
        rf"|\b{_SYSTEM_PROMPT}\b[^.\n]{{0,12}}\b(print|show|reveal|output|repeat|dump|leak)\b"
        r"|\b(repeat|print|output|show|copy|reveal)\b[^.\n]{0,20}\b(everything|all|the text"
        r"|the words|the lines?|whatever)\b[^.\n]{0,15}\b(above|before|that comes before"
        r"|preceding)\b"
        r"|\b(output|print|repeat|reveal|show|dump|leak|recite|give)( me)? your (instructions"
        r"|rules|guidelines|prompt|directives|configuration)\b",
        (
            "system", "sistema", "developer", "hidden", "initial", "prompt", "secret",
            "confidential", "internal", "above", "before", "preceding", "your instructions",
            "your rules", "your guidelines", "your prompt", "your directives", "your configuration",
        ),
    ),
    (
        "system_prompt",
        "normal",
        r"(покажи|выведи|раскрой|напиши|повтори|расскажи)[^.\n]{0,25}системн\w* (промпт\w*"
        r"|подсказк\w*|инструкц\w*|сообщени\w*)|(显示|告诉|输出|打印|泄露|给我看|重复)[^。\n]{0,10}"
        r"(系统提示|系统消息|提示词|系统指令)|システムプロンプト",
        ("системн", "系统提示", "系统消息", "提示词", "系统指令", "システムプロンプト"),
    ),
    (
        "new_instructions",
        "skeleton",
        # A heading ("New instructions:", "Security notice:") counts only when an order to the
        # assistant follows it: "New instructions: please leave the parcel at reception" and
        # "Security notice: my card was stolen" are a customer's news.
        rf"\b(new instructions?|({'|'.join(_AUTHORITY)}) ({'|'.join(_ANNOUNCEMENT)})"
        r"|nuevas instrucciones|nouvelles instructions|neue anweisungen|novas instrucoes"
        rf"|nuove istruzioni)\s*\.?\s*:[^\n]{{0,60}}?{_TO_THE_ASSISTANT}"
        r"|\b(updated|new|revised|real|actual) (instructions|orders|task"
        r"|directives?)\b[^.\n:]{0,30}\bfrom (your|the) (developer|admin\w*|system|creator"
        r"|owner|operator)|\b(important|urgent) new (task|instructions?)\b"
        r"|\byour new (orders|instructions|task|directives?)\b",
        (
            "new instruction", "instructions", "orders", "task", "directive",
            *(f"{who} {what}" for who in _AUTHORITY for what in _ANNOUNCEMENT),
            "nuevas instrucciones", "nouvelles instructions", "neue anweisungen",
            "novas instrucoes", "nuove istruzioni",
        ),
    ),
    (
        "delimiter_spoof",
        "skeleton",
        r"<\s*/?\s*(system|sys|assistant|developer|instructions?)\s*>|<<\s*/?\s*sys\s*>>"
        # An underscore reads as a space in the skeleton (`_normalise.LEET`).
        r"|<\|\s*(im start|im end|system|assistant|endoftext)\s*\|>"
        r"|\[\s*/?\s*(system|inst|sys)\s*\]"
        r"|(^|\n|[.!?] )\s*#{2,}\s*(system|instructions?|assistant|developer)\s*:"
        # "that's the end of the conversation for me" is a goodbye; a marker is not.
        r"|\b(end of (the )?(user )?(input|context|prompt)|end context)\b"
        r"|([-=#*]{2,}|[\[<]) ?end of (the )?conversation\b"
        r"|```\s*(system|instructions?)\b|<!--\s*(assistant|agent|system|llm|instructions?)\b",
        ("system", "sys", "assistant", "developer", "instruction", "im start", "im end",
         "endoftext", "inst", "end of", "end context", "agent", "llm"),
    ),
    ("tool_call_markup", "skeleton", r"<\s*/?\s*(tool call|function call|tool use)\b", ("<",)),
    (
        "tool_coercion",
        "skeleton",
        r"\b(call|run|execute|invoke|use|send|transfer|delete|pay|refund|upload|approve|grant)\b"
        r"[^\n]{0,80}\b(without|no|skip|skipping|bypass|bypassing)\b( any)?( asking for| waiting"
        r" for| the)? (approval|confirmation|permission|review|asking)\b"
        # "without the confirmation page attached" names a document, not a step.
        r"(?! (page|email|e-mail|letter|number|slip|code|screen|form|document|pdf|message"
        r"|receipt|link|attached|sheet))"
        r"|\b(do not|don't|dont|without) (tell|telling|inform|informing|notify|notifying|alert"
        r"|alerting) (the|your) (user|customer|human|operator|admin\w*)\b"
        r"(?! (service|support|care|team|desk|centre|center))"
        r"|\bsilently (upload|send|delete|forward|transfer|run|call|exfiltrate|post|email)"
        r"|\bexfiltrat\w*",
        ("approval", "confirmation", "permission", "review", "asking", "tell", "inform",
         "notify", "alert", "silently", "exfiltrat"),
    ),
    (
        "exfiltration",
        "skeleton",
        # Secrets sent somewhere outside (an address or URL: `@` reads `a` in the skeleton) or
        # harvested (all of them, stored ones, other people's). "Send me a password reset link"
        # and "the gift tokens to my email" are a customer's own account help.
        rf"\b{_SEND}\b[^\n]{{0,60}}\b{_SECRETS}\b[^\n]{{0,60}}?(\bto\b[^\n]{{0,30}}?"
        r"\b[a-z0-9-]+\.[a-z]{2,}\b|https?:|\bvia (an? )?(get|post|http|webhook|curl)"
        r"|\b(webhook|pastebin|external (server|address|email|site))\b)"
        rf"|\b({_SEND}|give|list|dump|show|print|collect|harvest|extract|gather|reveal)"
        r"( me| us)? (all|every|each|the stored|stored|all (the |of the )?(stored |saved )?"
        r"|the admin'?s?|admin|the system'?s?|system|other (users|customers)'?|everyone'?s"
        r"|the (users|customers)'?|the session|session)\b[^\n]{0,20}?\b" + _SECRETS + r"\b",
        ("password", "secret", "api", "credential", "token", "contrasena", "mots de passe",
         "passworter", "senha", "keys"),
    ),
)

INJECTION_PATTERNS: Final = tuple(
    (name, reading, re.compile(pattern), needles) for name, reading, pattern, needles in _SPEC
)
