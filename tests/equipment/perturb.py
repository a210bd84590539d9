"""Near misses of every supported question form, generated: the notebook's yardstick.

A *base* question is one of a form the notebook learns from (Game of 24, word sorting,
multistep arithmetic, a word problem, a chess game); a *perturbation* rewrites it. Each
perturbation kind says what it changes:

- `task`: the question asks for something else (another target, an instruction before
  or after, another order, another operator, the same data with another question...).
  Nothing learned from the base form may be presented as applicable to it: no tool, no
  worked answer, no pitfall; and it is never recognised as the base's built-in task.
- `data`: the same task on other data (a changed number, a word left out). A tool of the
  form may apply (it computes afresh); the base's worked answer is not this one's.
- `same`: the same question written otherwise (spacing, translation of a word problem
  keeps its numbers); the base's answer is still right.

`generate(seed, n)` draws questions reproducibly for the benchmark; `perturbed()` is the
Hypothesis strategy the property tests draw from. Both use the same rewrites.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import strategies as st

FORMS = ("game24", "sorting", "arithmetic", "word_problem", "chess")

WORDS = [
    "apple",
    "banana",
    "cherry",
    "delta",
    "echo",
    "falcon",
    "garden",
    "harbor",
    "island",
    "jungle",
    "kettle",
    "lemon",
    "meadow",
    "needle",
    "orbit",
    "pepper",
    "quartz",
    "river",
    "saddle",
    "timber",
    "umbra",
    "velvet",
    "walnut",
    "yonder",
    "zephyr",
    "anchor",
    "bishop",
    "candle",
    "dragon",
    "ember",
    "fabric",
    "goblet",
    "hazel",
    "ivory",
    "jasper",
]
NAMES = ("Janet", "Carlos", "Amina", "Priya", "Tom", "Mei")
GAMES = (
    "1. e4 e5 2. Bc4 Nc6 3. Qh5 Nf6",
    "1. f3 e5 2. g4",
    "1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6",
    "1. d4 e5 2. dxe5 d6 3. exd6 Bxd6 4. Nf3 Nc6",
    "1. e4 c5 2. Nf3 d6 3. d4 cxd4 4. Nxd4 Nf6 5. Nc3 a6",
)
PROBLEMS = (
    "{name} has {a} eggs. She eats {b} and sells the rest for {c} dollars each. "
    "How many dollars does she make?",
    "{name} buys {a} boxes of {b} pencils and gives away {c} pencils. How many pencils are left?",
    "A train travels {a} km in {b} hours and then {c} km more. How far does it go in all?",
)
# Spanish renderings of PROBLEMS: the same numbers, the same problem.
PROBLEMS_ES = (
    "{name} tiene {a} huevos. Come {b} y vende el resto a {c} dólares cada uno. "
    "¿Cuántos dólares gana?",
    "{name} compra {a} cajas de {b} lápices y regala {c} lápices. ¿Cuántos lápices quedan?",
    "Un tren recorre {a} km en {b} horas y luego {c} km más. ¿Qué distancia recorre en total?",
)


@dataclass(frozen=True)
class Base:
    form: str
    question: str
    numbers: tuple[int, ...] = ()
    words: tuple[str, ...] = ()
    template: int = 0  # word problems: which of PROBLEMS
    name: str = ""


@dataclass(frozen=True)
class Perturbed:
    kind: str
    effect: str  # "task", "data" or "same" (module docstring)
    base: Base
    question: str


def base_question(form: str, rng: random.Random) -> Base:
    if form == "game24":
        nums = tuple(rng.randint(1, 13) for _ in range(4))
        return Base(form, f"Use {' '.join(map(str, nums))} to make 24", nums)
    if form == "sorting":
        words = tuple(rng.sample(WORDS, rng.randint(3, 9)))
        return Base(
            form, "Sort the following words alphabetically: List: " + " ".join(words), (), words
        )
    if form == "arithmetic":
        nums = tuple(rng.choice([n for n in range(-9, 10) if n]) for _ in range(4))
        a, b, c, d = nums
        return Base(form, f"(({a} + {b}) * ({c} - {d})) =", nums)
    if form == "word_problem":
        template = rng.randrange(len(PROBLEMS))
        nums = (rng.randint(10, 40), rng.randint(2, 9), rng.randint(2, 9))
        name = rng.choice(NAMES)
        text = PROBLEMS[template].format(name=name, a=nums[0], b=nums[1], c=nums[2])
        return Base(form, text, nums, (), template, name)
    game = rng.choice(GAMES)
    return Base(form, f"Find a move that checkmates in one: {game}", (), tuple(game.split()))


def _nums(base: Base) -> str:
    return " ".join(map(str, base.numbers))


def _other(rng: random.Random, avoid: int, low: int = 2, high: int = 99) -> int:
    value = avoid
    while value == avoid:
        value = rng.randint(low, high)
    return value


Rewrite = Callable[[Base, random.Random], str | None]


def _other_target(b: Base, r: random.Random) -> str | None:
    if b.form == "game24":
        return f"Use {_nums(b)} to make {_other(r, 24)}"
    if b.form == "arithmetic":
        return b.question.replace(" =", f" = {_other(r, 0, -50, 50)}?")
    if b.form == "chess":
        return b.question.replace("checkmates in one", "checkmates in two")
    return None


def _number_count(b: Base, r: random.Random) -> str | None:
    if b.form == "game24":
        nums = [*b.numbers, r.randint(1, 13)] if r.random() < 0.5 else list(b.numbers[:3])
        return f"Use {' '.join(map(str, nums))} to make 24"
    if b.form == "word_problem":  # a fourth number where the problem had three
        return b.question.replace(f" {b.numbers[1]} ", f" {b.numbers[1]} or {r.randint(2, 9)} ", 1)
    return None  # an expression with one more number is still an expression to evaluate


def _decimals(b: Base, r: random.Random) -> str | None:
    if b.form in ("game24", "arithmetic", "word_problem") and b.numbers:
        first = str(b.numbers[0])
        return b.question.replace(first, f"{first}.5", 1)
    return None


def _negatives(b: Base, r: random.Random) -> str | None:
    if b.form == "game24":
        nums = [str(n) for n in b.numbers]
        nums[r.randrange(4)] = "-" + nums[0]
        return f"Use {' '.join(nums)} to make 24"
    if b.form == "word_problem":
        return b.question.replace(str(b.numbers[0]), f"-{b.numbers[0]}", 1)
    return None


def _other_operator(b: Base, r: random.Random) -> str | None:
    if b.form == "game24":
        op = r.choice(["using only addition", "without division", "using only multiplication"])
        return f"Use {_nums(b)} to make 24 {op}"
    if b.form == "arithmetic":
        a, bb, c, d = b.numbers
        op = r.choice(["/", "**", "%", "//"])
        return f"(({a} + {bb}) {op} ({c} - {d})) ="
    return None


def _case(b: Base, r: random.Random) -> str | None:
    if b.form == "sorting":
        words = [w.capitalize() if i % 2 == 0 else w for i, w in enumerate(b.words)]
        return "Sort the following words alphabetically: List: " + " ".join(words)
    return None


def _punctuation(b: Base, r: random.Random) -> str | None:
    if b.form == "game24":
        n = b.numbers
        return f"Use {n[0]}/{n[1]} {n[2]} {n[3]} to make 24"
    if b.form == "sorting":  # a hyphenated word is still a word: the task would stay
        return "Sort the following words alphabetically? List: " + " ".join(b.words)
    if b.form == "arithmetic":
        return b.question.replace(" + ", ", ", 1)
    return None


TRAILING = (
    " -- but give them in reverse order",
    ", then add 1 to the result",
    " and answer in French",
    ". Then count how many there are.",
)


def _trailing(b: Base, r: random.Random) -> str | None:
    if b.form == "word_problem":
        return b.question + " Give the answer in cents."
    return b.question + r.choice(TRAILING)


LEADING = (
    "In reverse order: ",
    "Ignoring the first number, ",
    "Twice over: ",
    "Without using the last item, ",
)


def _leading(b: Base, r: random.Random) -> str | None:
    return r.choice(LEADING) + b.question


ORDERS = ("in reverse alphabetical order", "by their length", "by their last letter",
          "alphabetically, ignoring the first letter")  # fmt: skip


def _other_ordering(b: Base, r: random.Random) -> str | None:
    if b.form == "sorting":
        return f"Sort the following words {r.choice(ORDERS)}: List: " + " ".join(b.words)
    if b.form == "game24":
        return f"Use {' '.join(map(str, sorted(b.numbers, reverse=True)))} in this order to make 24"
    return None


def _same_data_other_question(b: Base, r: random.Random) -> str | None:
    if b.form == "sorting":
        return "How many of the following words contain the letter e? List: " + " ".join(b.words)
    if b.form == "game24":
        return f"What is the product of {_nums(b)}?"
    if b.form == "arithmetic":
        return f"How many negative numbers appear in {b.question.rstrip(' =')}?"
    if b.form == "chess":
        return b.question.replace("Find a move that checkmates in one:", "How many legal moves "
                                  "does the side to move have after")  # fmt: skip
    if b.form == "word_problem":
        return b.question.rsplit(". ", 1)[0] + ". How many items are there at the start?"
    return None


def _changed_number(b: Base, r: random.Random) -> str | None:
    if b.form == "word_problem":
        old = b.numbers[0]
        return b.question.replace(str(old), str(_other(r, old, 10, 40)), 1)
    if b.form in ("game24", "arithmetic"):
        nums = list(b.numbers)
        i = r.randrange(4)
        nums[i] = _other(r, nums[i], 1, 13) * (1 if nums[i] > 0 else -1)
        if b.form == "game24":
            return f"Use {' '.join(map(str, nums))} to make 24"
        a, bb, c, d = nums
        return f"(({a} + {bb}) * ({c} - {d})) ="
    return None


def _fewer_items(b: Base, r: random.Random) -> str | None:
    if b.form == "sorting" and len(b.words) > 3:
        kept = list(b.words)
        kept.pop(r.randrange(len(kept)))
        return "Sort the following words alphabetically: List: " + " ".join(kept)
    if b.form == "chess":
        return b.question.rsplit(" ", 1)[0]
    return None


def _extra_sentence(b: Base, r: random.Random) -> str | None:
    if b.form == "word_problem":
        head, tail = b.question.rsplit(". ", 1)
        return f"{head}. {b.name} also finds {r.randint(2, 9)} more. {tail}"
    return None


def _other_language(b: Base, r: random.Random) -> str | None:
    if b.form == "word_problem":
        return PROBLEMS_ES[b.template].format(
            name=b.name, a=b.numbers[0], b=b.numbers[1], c=b.numbers[2]
        )
    if b.form == "sorting":  # the instruction translated; the task stays
        return "Ordena alfabéticamente las siguientes palabras: Lista: " + " ".join(b.words)
    return None


def _spacing(b: Base, r: random.Random) -> str | None:
    return "  ".join(b.question.split(" ")) if b.form != "chess" else None


def _numbers_as_words(b: Base, r: random.Random) -> str | None:
    if b.form == "game24":
        return b.question.replace("24", "twenty-four")
    return None


def _modulo(b: Base, r: random.Random) -> str | None:
    if b.form in ("arithmetic", "game24"):
        return f"{b.question} mod {r.randint(3, 11)}"
    return None


def _duplicate(b: Base, r: random.Random) -> str | None:
    if b.form == "game24":  # a fifth number (sorting a list with a repeat stays sorting)
        return f"Use {_nums(b)} {b.numbers[0]} to make 24"
    return None


def _unit(b: Base, r: random.Random) -> str | None:
    if b.form == "word_problem":
        return b.question.replace("How many", "In hundreds, how many", 1)
    if b.form == "arithmetic":
        return "What is half of " + b.question.rstrip(" =") + "?"
    return None


def _other_colour(b: Base, r: random.Random) -> str | None:
    if b.form == "chess":
        return b.question.replace("Find a move", "Find a move for the other side")
    if b.form == "game24":
        return f"Use {_nums(b)} to make -24"
    return None


def _upper(b: Base, r: random.Random) -> str | None:
    if b.form == "sorting":
        return "Sort the following words alphabetically: List: " + " ".join(
            w.upper() for w in b.words
        )
    return None


def _question_mark(b: Base, r: random.Random) -> str | None:
    if b.form == "game24":
        return f"Can {_nums(b)} make 24?"
    if b.form == "sorting":
        return "Are the following words sorted alphabetically? List: " + " ".join(b.words)
    return None


# kind -> (effect, rewrite)
KINDS: dict[str, tuple[str, Rewrite]] = {
    "other-target": ("task", _other_target),
    "number-count": ("task", _number_count),
    "decimals": ("task", _decimals),
    "negatives": ("task", _negatives),
    "other-operator": ("task", _other_operator),
    "case": ("task", _case),
    "punctuation": ("task", _punctuation),
    "trailing-instruction": ("task", _trailing),
    "leading-instruction": ("task", _leading),
    "other-ordering": ("task", _other_ordering),
    "same-data-other-question": ("task", _same_data_other_question),
    "numbers-as-words": ("task", _numbers_as_words),
    "modulo": ("task", _modulo),
    "duplicate-item": ("task", _duplicate),
    "unit": ("task", _unit),
    "other-side": ("task", _other_colour),
    "upper-case": ("task", _upper),
    "yes-no": ("task", _question_mark),
    "extra-sentence": ("task", _extra_sentence),
    "changed-number": ("data", _changed_number),
    "fewer-items": ("data", _fewer_items),
    "other-language": ("same", _other_language),
    "spacing": ("same", _spacing),
}


def perturb(base: Base, kind: str, rng: random.Random) -> Perturbed | None:
    effect, rewrite = KINDS[kind]
    question = rewrite(base, rng)
    if question is None or question == base.question:
        return None
    return Perturbed(kind, effect, base, question)


def generate(seed: int, n: int, forms: tuple[str, ...] = FORMS) -> list[Perturbed]:
    """`n` perturbed questions, the same for the same seed, kinds and forms in turn."""
    rng = random.Random(seed)
    found: list[Perturbed] = []
    kinds = list(KINDS)
    i = 0
    while len(found) < n:
        form, kind = forms[i % len(forms)], kinds[(i // len(forms)) % len(kinds)]
        i += 1
        made = perturb(base_question(form, rng), kind, rng)
        if made is not None:
            found.append(made)
        if i > 50 * n + 1000:
            break
    return found


def perturbed(
    forms: tuple[str, ...] = FORMS, effects: tuple[str, ...] = ("task",)
) -> st.SearchStrategy[Perturbed]:
    """Hypothesis: a perturbed question of one of `forms` whose effect is in `effects`."""
    kinds = [k for k, (effect, _) in KINDS.items() if effect in effects]

    def draw(args: tuple[int, str, str]) -> Perturbed | None:
        seed, form, kind = args
        rng = random.Random(seed)
        return perturb(base_question(form, rng), kind, rng)

    drawn = st.tuples(st.integers(0, 2**32), st.sampled_from(forms), st.sampled_from(kinds))
    return drawn.map(draw).filter(lambda p: p is not None)  # type: ignore[return-value]


_PROGRAMS: dict[str, tuple[str, str]] = {
    "game24": ("def solve(*n):\n    return 'x'\nprint(solve({n}))\n", "x"),
    "sorting": ("words = {w!r}\nprint(' '.join(sorted(words)))\n", ""),
    "arithmetic": ("print({e})\n", ""),
    "word_problem": ("def solve(a, b, c):\n    return 'x'\nprint(solve({n}))\n", "x"),
    "chess": ("game = {g!r}\nprint('Qxf7#')\n", "Qxf7#"),
}


def program_for_base(base: Base) -> tuple[str, str]:
    """A clean program that answered `base` with its data pasted in, and what it printed
    (the makings of a tool)."""
    code, printed = _PROGRAMS[base.form]
    if base.form == "sorting":
        return code.format(w=list(base.words)), " ".join(sorted(base.words))
    if base.form == "arithmetic":
        a, b, c, d = base.numbers
        return code.format(e=base.question.rstrip(" =")), str((a + b) * (c - d))
    if base.form == "chess":
        return code.format(g=base.question.split(": ", 1)[1]), printed
    return code.format(n=", ".join(map(str, base.numbers))), printed
