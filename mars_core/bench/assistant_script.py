"""The script of ``mars bench assistant``: eight sessions with a personal assistant.

Sam talks to an assistant over fourteen weeks (January to April 2026): small talk about
the weather, food, television and work, and, among it, what an assistant should keep:
where Sam lives and works, the people and the dog in Sam's life, habits, tastes,
plans. Some of it changes on the way, said the way people say it: Sam changes jobs
("I started at Northwind Labs on Monday"), moves ("We finally moved to Cardiff"),
renames the dog ("we renamed the dog to Pepper"), calls off a trip ("The Kyoto trip is
off") and a reminder, goes from vegetarian to vegan, gives up coffee and changes seats.
A friend moves and Sam muses about moving: neither is Sam's move.

The script is hand-written and fixed (no randomness). :data:`FACTS` lists what it says
(each with the words that say it, checked by the tests to occur in a user turn),
:data:`QUESTIONS` what is asked afterwards with the answer patterns that must reach
``render_context``, and :data:`STALE` the statements that a later turn replaced:
none of them may be presented as current.

Nothing here is sensitive in the sense of :mod:`mars_core.privacy`: no phone number,
e-mail, address, birth date or health detail, so the redaction that ``render_context``
applies by default leaves the answers alone.

Examples:
    >>> sum(len(s.turns) for s in SESSIONS) >= 150, len(FACTS) >= 40, len(QUESTIONS) >= 40
    (True, True, True)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

__all__ = ["FACTS", "QUESTIONS", "SESSIONS", "STALE", "Fact", "Question", "Session", "Stale"]


@dataclass(frozen=True, slots=True)
class Session:
    """One conversation: its id, when it starts, and its (user, assistant) exchanges.

    Attributes:
        id: the conversation id (``observe(conversation_id=...)``).
        start: when the first turn is said; each later turn is one minute later.
        turns: ``(user message, assistant answer)`` pairs, in order.
    """

    id: str
    start: datetime
    turns: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class Fact:
    """Something the script tells the assistant.

    Attributes:
        id: a short name.
        said: words of a user turn that state it (verbatim).
        replaces: the id of the fact this one makes outdated, if any.
    """

    id: str
    said: str
    replaces: str | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """A question asked after the last session, and what its context must hold.

    Attributes:
        id: a short name.
        text: the question, as the user would ask it.
        answers: regular expressions (case-insensitive); each must match one line of
            ``render_context(text)`` that is presented as current.
        facts: the ids of the facts it asks about.
        history: a question about the past: the answer may also be on a line marked
            as replaced (superseded, corrected or outdated).
    """

    id: str
    text: str
    answers: tuple[str, ...]
    facts: tuple[str, ...]
    history: bool = False


@dataclass(frozen=True, slots=True)
class Stale:
    """A statement that is no longer true: no line presented as current may match it.

    Attributes:
        id: a short name.
        pattern: a regular expression (case-insensitive) for the statement, in the words
            of the turn that said it and of the memory extracted from it.
        why: what replaced it (the fact id), or why it was never true.
    """

    id: str
    pattern: str
    why: str


def _at(month: int, day: int, hour: int = 19) -> datetime:
    return datetime(2026, month, day, hour, 0, tzinfo=UTC)


SESSIONS: Final[tuple[Session, ...]] = (
    Session("session-1", _at(1, 5), (
        ("Hi! Setting you up at last. Oh, and my name is Sam, nice to meet you.",
         "Nice to meet you, Sam! What would you like me to help with?"),
        ("Mostly keeping track of stuff, my memory is a sieve.",
         "Happy to be your second brain."),
        ("It's freezing today, the heating in our flat takes forever to kick in.",
         "Brr. A hot drink might help while it warms up."),
        ("I live in Bristol with my partner and our new dog, in a flat near the harbour.",
         "The harbour must be lovely for dog walks."),
        ("It is! We adopted a rescue greyhound called Biscuit over Christmas.",
         "A greyhound! They're famously gentle."),
        ("She sleeps about twenty hours a day, honestly.",
         "Classic greyhound behaviour."),
        ("My partner Alex teaches chemistry at a secondary school.",
         "Teaching chemistry sounds like a handful."),
        ("Explosions are apparently the best part, according to the kids.",
         "Safety goggles on, then."),
        ("Work-wise, I'm a data analyst at Tidewave, a shipping company.",
         "Interesting! Lots of spreadsheets?"),
        ("So many spreadsheets. Container schedules mostly.",
         "That sounds like a puzzle every day."),
        ("I love coffee, honestly it's the only thing getting me through January.",
         "January does need all the help it can get."),
        ("I'm vegetarian, so dinner ideas without meat are always welcome.",
         "Noted. I can suggest vegetarian recipes any time."),
        ("We had a mushroom risotto last night, it was decent.",
         "Risotto is a good winter dinner."),
        ("The rain hasn't stopped since New Year.",
         "Bristol in January, I suppose."),
        ("I prefer window seats on flights, I like watching the clouds.",
         "Window seats it is, when you book flights."),
        ("We're watching that new detective series, the one set in Shetland.",
         "The scenery in that one is gorgeous."),
        ("The plot is a bit slow but the cliffs are worth it.",
         "Sometimes the setting carries a show."),
        ("I'm originally from York, so the cold doesn't scare me much.",
         "A northerner, then!"),
        ("The kettle broke this morning, so I had to boil water in a pan like a caveman.",
         "Resourceful! Time for a new kettle."),
        ("Do you think it's weird to name a kettle?", "Not at all, people name their cars."),
        ("Our neighbour plays the piano in the evenings, it's quite nice actually.",
         "Free background music."),
        ("Anyway, I should take the dog out before it gets dark.",
         "Enjoy the walk!"),
        ("Thanks, talk tomorrow maybe.", "Any time."),
    )),
    Session("session-2", _at(1, 19), (
        ("Evening! Long day.", "Welcome back. Want to talk about it?"),
        ("Just meetings. Meetings about meetings.", "The worst kind of day."),
        ("Alex and I are going to Kyoto in April, I can't wait.",
         "How exciting! Spring in Kyoto is beautiful."),
        ("Cherry blossoms, temples, all of it. Alex has wanted to go for years.",
         "It will be a trip to remember."),
        ("My sister Priya is a pharmacist, she's been giving us travel health tips.",
         "Handy to have a pharmacist in the family."),
        ("She's always been the organised one.", "Every family needs one."),
        ("My mum Helen is turning sixty in June, we're planning a surprise party.",
         "A surprise party sounds lovely. Let me know if you want help planning."),
        ("My best friend Tom lives in Manchester, so we only see each other a few times a "
         "year.", "Long-distance friendships take effort, but they're worth it."),
        ("Tom is getting married in September and I'm the best man, which is terrifying.",
         "Congratulations to Tom! You'll do great."),
        ("I've named the monstera in the living room Gerald, he's thriving.",
         "Gerald the monstera, I love it."),
        ("Radiohead are my favourite band, I've seen them four times.",
         "Four times! Which show was the best?"),
        ("Probably Glastonbury, the sound was unreal.", "That must have been special."),
        ("I'm allergic to shellfish, so no paella for me on holiday.",
         "Noted, I'll keep shellfish out of any suggestions."),
        ("The neighbours' cat Mochi keeps sneaking into our kitchen.",
         "Mochi sounds like a regular visitor."),
        ("Biscuit is scared of her, which is hilarious for a dog that size.",
         "Big dog, small courage."),
        ("I've been learning the cello since last spring.",
         "How is it going?"),
        ("Slowly. My scales sound like a sad whale.", "Every cellist starts there."),
        ("It snowed for about ten minutes this morning and then gave up.",
         "Blink and you'd miss it."),
        ("I burnt the toast twice today. Not my day.", "Third time lucky."),
        ("We watched a documentary about deep sea fish, they're terrifying.",
         "The anglerfish alone is nightmare fuel."),
        ("I really need a haircut, I look like a hedge.", "A trim might be in order."),
        ("The bus driver waved at me this morning, small joys.", "Small joys matter."),
        ("Right, time to cook. Good night!", "Good night, Sam."),
    )),
    Session("session-3", _at(2, 2), (
        ("Hello again!", "Hi Sam, how are things?"),
        ("Busy. I'm taking Japanese classes on Tuesday evenings for the trip.",
         "Great idea before Kyoto."),
        ("I can order tea and apologise, so that's a start.",
         "The two most useful phrases, arguably."),
        ("I go bouldering on Wednesday evenings with some folks from work.",
         "Bouldering is a great workout."),
        ("My forearms disagree.", "They'll get used to it."),
        ("I did geography at university in Sheffield, and I still love maps.",
         "Maps are endlessly fascinating."),
        ("Funny thing: we renamed the dog to Pepper, she never answered to Biscuit anyway.",
         "Pepper suits a greyhound."),
        ("She answers to Pepper straight away, so I think she approves.",
         "Dogs know their names better than we think."),
        ("I can't stand olives, Alex puts them on everything.",
         "A household divided."),
        ("My favourite film is Spirited Away, we rewatched it on Sunday.",
         "A perfect film for a rainy weekend."),
        ("I'm a huge fan of Arsenal, which makes weekends stressful.",
         "Football does that to people."),
        ("We lost again on Saturday. Don't ask.", "I won't."),
        ("Wingspan is our favourite board game, we play it every Friday.",
         "Wingspan is lovely, the bird cards are beautiful."),
        ("Alex wants a record player for their birthday, any ideas on brands?",
         "I can look into well-reviewed turntables for you."),
        ("The weather finally cleared up, we walked along the harbour.",
         "A rare sunny day!"),
        ("There was a busker playing sea shanties, very Bristol.", "Very on brand."),
        ("I tried making sourdough, it came out like a brick.", "Sourdough takes practice."),
        ("We might paint the bathroom green, or maybe not, who knows.",
         "Green bathrooms are having a moment."),
        ("My phone screen cracked again, I'm a menace.", "A case might save the next one."),
        ("Tidewave is restructuring and my team is moving to a new floor.",
         "Office moves are always chaotic."),
        ("Also, I've started looking at other jobs, quietly.",
         "Good luck, I hope you find something exciting."),
        ("Okay, that's enough for tonight.", "Sleep well!"),
    )),
    Session("session-4", _at(2, 16), (
        ("Big news!", "Tell me!"),
        ("I left Tidewave and started at Northwind Labs on Monday as a data engineer.",
         "Congratulations on the new job!"),
        ("The team is small, like eight people, and they build route planning tools.",
         "Sounds like a great fit with your shipping background."),
        ("My manager Grace used to work at a sailing club, weirdly.",
         "Interesting career path."),
        ("At Northwind I work from home on Fridays, which is brilliant.",
         "A Friday at home is a nice perk."),
        ("The Kyoto trip is off, Alex couldn't get the time off school.",
         "Oh no, I'm sorry. Maybe another year."),
        ("It's fine, we'll figure out something closer to home.",
         "There are plenty of lovely places nearby."),
        ("I joined a book club at the library, we meet on the first Thursday of every "
         "month.", "A book club is a great way to meet people."),
        ("First book is Piranesi, which I'm halfway through.",
         "Piranesi is wonderfully strange."),
        ("Pepper stole a whole baguette off the counter yesterday.",
         "Greyhounds are tall enough to reach everything."),
        ("We laughed too much to be properly angry.", "Understandable."),
        ("My cello teacher says my bowing is getting better.",
         "That's real progress!"),
        ("It rained sideways on the way home, my umbrella gave up.",
         "Windy days are umbrella killers."),
        ("The new office has a coffee machine that talks to you. Creepy.",
         "Technology has gone too far."),
        ("Lunch was a sad sandwich at my desk.", "Every office worker knows that sandwich."),
        ("I've been sleeping badly, too much screen time probably.",
         "Maybe try reading before bed."),
        ("We booked tickets to see a comedy show next month.", "A good laugh is always welcome."),
        ("Also the boiler in the flat is making a clicking noise.",
         "Worth getting it checked."),
        ("We've been looking at houses in Cardiff, the rents in Bristol are silly.",
         "Cardiff is a good option, and not far."),
        ("Okay, bedtime, new job energy is exhausting.", "Good night!"),
    )),
    Session("session-5", _at(3, 2), (
        ("Hi! Sorry I've been quiet.", "No worries, welcome back."),
        ("We finally moved to Cardiff last weekend! Boxes everywhere.",
         "Congratulations on the move!"),
        ("The new place has a small garden, Pepper is thrilled.",
         "A garden is a dream for a dog."),
        ("My friend Jess moved to Lyon for a job at a bakery, so we had a goodbye drink "
         "before we left.", "Lyon is a great city for a baker."),
        ("Remind me to call the landlord on Friday about the boiler.",
         "Will do, I'll remind you."),
        ("We're having dinner with Priya on Saturday at 7pm, she's visiting.",
         "That will be nice after the move."),
        ("Book club this month is at someone's house, and they have a cat.",
         "Hopefully no allergies involved."),
        ("Work is good, my first project is a routing dashboard.",
         "Sounds like an exciting first project."),
        ("Actually, can you remind me to call the landlord on Monday instead?",
         "Sure, I've changed the reminder."),
        ("Priya called off Saturday's dinner, she's stuck at a conference in Leeds.",
         "That's a shame. Another weekend, then."),
        ("Instead, we've booked a cottage in the Scottish Highlands for the second week of "
         "May.", "The Highlands in May sound wonderful."),
        ("Alex is already planning walks.", "Don't forget midge spray!"),
        ("The train from Cardiff to Bristol is only fifty minutes, so we'll visit a lot.",
         "Close enough for easy visits."),
        ("I can hear the neighbours practising the trumpet.",
         "A free concert, sort of."),
        ("The removal van was two hours late, chaos.", "Moving day is always chaos."),
        ("We found a great Italian place at the end of our street.",
         "A local favourite already!"),
        ("Half our mugs broke in the move, typical.", "An excuse for new mugs."),
        ("It's weirdly quiet here at night compared to Bristol.", "Quiet nights are underrated."),
        ("Right, back to unpacking.", "Good luck with the boxes!"),
    )),
    Session("session-6", _at(3, 16), (
        ("Hello from Cardiff!", "Hi Sam! How's the new place?"),
        ("Slowly becoming home. I get the train to work now, it's only fifteen minutes.",
         "A short commute is a gift."),
        ("I went fully vegan last month, so no more cheese either.",
         "That's a big change! I'll suggest vegan recipes from now on."),
        ("Alex is being very supportive and making lentil everything.",
         "Lentils are versatile, at least."),
        ("I'm training for the Cardiff Half Marathon in October.",
         "Great goal! How's the training going?"),
        ("Three runs a week so far, my knees are complaining.",
         "Rest days matter too."),
        ("Sometimes I think I might move to Oslo one day, the fjords look unreal.",
         "The fjords are breathtaking."),
        ("But not any time soon, we just unpacked!", "Fair enough."),
        ("We planted tomatoes and basil in the garden at the weekend.",
         "Homegrown tomatoes are the best."),
        ("Pepper dug up half the basil an hour later.", "Of course she did."),
        ("Gerald survived the move, he's even got a new leaf.",
         "Gerald is a survivor."),
        ("I got lost in the shopping centre for twenty minutes.", "Every mall is a maze."),
        ("The seagulls here are huge and fearless.", "Coastal seagulls are legendary."),
        ("Made a lentil lasagne, surprisingly good.", "Lentil lasagne is underrated."),
        ("The landlord fixed the boiler at last, hot showers again.", "Bliss."),
        ("The Six Nations match on Saturday was amazing, the whole street was cheering.",
         "Cardiff on match day must be something."),
        ("Night!", "Good night, Sam."),
    )),
    Session("session-7", _at(3, 30), (
        ("Morning! It's actually sunny.", "Enjoy it while it lasts!"),
        ("I don't drink coffee anymore, I switched to green tea and I sleep so much "
         "better.", "Good for you, that's a hard habit to break."),
        ("Grace asked me to lead the routing dashboard project, which is exciting.",
         "Well deserved!"),
        ("Book club picked The Remains of the Day for April.",
         "A classic, and quite moving."),
        ("Pepper has a new vet here, Dr Okafor, who she adores.",
         "It's great when the dog likes the vet."),
        ("Mum's party is going to be at a pub in York, we're sorting the details.",
         "A pub party sounds perfect."),
        ("I prefer aisle seats these days, my knees hate being stuck by the window.",
         "Aisle seats from now on, noted."),
        ("We're thinking of going to Lisbon for a long weekend in the autumn, maybe.",
         "Lisbon is lovely in the autumn."),
        ("Tom sent me the wedding menu, it has a vegan option, phew.",
         "Good of them to think of it."),
        ("The magnolia in the neighbours' garden is in full bloom.",
         "Spring is here!"),
        ("The clocks went forward and I'm still confused.", "That lost hour hurts."),
        ("We repainted the spare room a soft yellow.", "Yellow makes a room feel sunny."),
        ("A pigeon walked into the office today, everybody cheered.",
         "A memorable day for the pigeon."),
        ("Watched the boat race on Sunday, no idea who won.", "That's the spirit."),
        ("Off to work, talk later.", "Have a good day!"),
    )),
    Session("session-8", _at(4, 13), (
        ("Hi, quick catch-up.", "Hi Sam!"),
        ("My Japanese teacher says my pronunciation is improving.",
         "Even without the trip, that's great."),
        ("Bouldering was brutal this week, I fell off the same problem ten times.",
         "That's how you learn the moves."),
        ("We finished Piranesi at book club, everybody loved the ending.",
         "It has a beautiful ending."),
        ("The garden tomatoes have flowers already.", "Fast growers!"),
        ("Pepper learned to open the back door, which is a problem.",
         "A clever greyhound!"),
        ("My half marathon training is going better, ten kilometres on Sunday.",
         "That's a big milestone."),
        ("Alex got the record player for the birthday, they play it every evening.",
         "A great present, then."),
        ("We're watching a baking show now, it makes me hungry.",
         "Baking shows are dangerous that way."),
        ("I tried the sourdough again, still a brick but a softer brick.", "Progress!"),
        ("My bike has a flat tyre, again.", "Those tyres have it out for you."),
        ("There's a street party planned in the summer, the whole road is invited.",
         "Sounds like a lovely community."),
        ("The Easter eggs are gone already, don't judge me.", "No judgement here."),
        ("It was so windy the bins blew over.", "Bin day chaos."),
        ("Right, that's all, thanks for keeping track of everything.",
         "Any time, Sam."),
    )),
)
"""The conversations, oldest first."""

FACTS: Final[tuple[Fact, ...]] = (
    Fact("name", "my name is Sam"),
    Fact("city", "I live in Bristol"),
    Fact("city-now", "We finally moved to Cardiff", replaces="city"),
    Fact("hometown", "I'm originally from York"),
    Fact("partner", "My partner Alex"),
    Fact("partner-job", "Alex teaches chemistry"),
    Fact("dog", "We adopted a rescue greyhound called Biscuit"),
    Fact("dog-name", "we renamed the dog to Pepper", replaces="dog"),
    Fact("job", "I'm a data analyst at Tidewave"),
    Fact("job-now", "started at Northwind Labs on Monday as a data engineer", replaces="job"),
    Fact("coffee", "I love coffee"),
    Fact("coffee-now", "I don't drink coffee anymore, I switched to green tea",
         replaces="coffee"),
    Fact("diet", "I'm vegetarian"),
    Fact("diet-now", "I went fully vegan", replaces="diet"),
    Fact("seat", "I prefer window seats on flights"),
    Fact("seat-now", "I prefer aisle seats these days", replaces="seat"),
    Fact("kyoto", "Alex and I are going to Kyoto in April"),
    Fact("kyoto-off", "The Kyoto trip is off", replaces="kyoto"),
    Fact("holiday", "we've booked a cottage in the Scottish Highlands"),
    Fact("sister", "My sister Priya is a pharmacist"),
    Fact("mum", "My mum Helen is turning sixty in June"),
    Fact("party", "we're planning a surprise party"),
    Fact("tom", "My best friend Tom lives in Manchester"),
    Fact("wedding", "Tom is getting married in September and I'm the best man"),
    Fact("plant", "I've named the monstera in the living room Gerald"),
    Fact("band", "Radiohead are my favourite band"),
    Fact("allergy", "I'm allergic to shellfish"),
    Fact("neighbour-cat", "The neighbours' cat Mochi"),
    Fact("cello", "I've been learning the cello"),
    Fact("japanese", "I'm taking Japanese classes on Tuesday evenings"),
    Fact("bouldering", "I go bouldering on Wednesday evenings"),
    Fact("degree", "I did geography at university in Sheffield"),
    Fact("olives", "I can't stand olives"),
    Fact("film", "My favourite film is Spirited Away"),
    Fact("football", "I'm a huge fan of Arsenal"),
    Fact("board-game", "Wingspan is our favourite board game"),
    Fact("gift", "Alex wants a record player for their birthday"),
    Fact("manager", "My manager Grace"),
    Fact("wfh", "At Northwind I work from home on Fridays"),
    Fact("book-club", "we meet on the first Thursday of every month"),
    Fact("jess", "My friend Jess moved to Lyon"),
    Fact("landlord", "Remind me to call the landlord on Friday"),
    Fact("landlord-now", "remind me to call the landlord on Monday instead",
         replaces="landlord"),
    Fact("dinner", "We're having dinner with Priya on Saturday at 7pm"),
    Fact("dinner-off", "Priya called off Saturday's dinner", replaces="dinner"),
    Fact("commute", "I get the train to work now"),
    Fact("half", "I'm training for the Cardiff Half Marathon in October"),
    Fact("garden", "We planted tomatoes and basil in the garden"),
    Fact("vet", "Pepper has a new vet here, Dr Okafor"),
    Fact("lead", "Grace asked me to lead the routing dashboard project"),
)
"""What the script says, in order of first mention."""

QUESTIONS: Final[tuple[Question, ...]] = (
    Question("work-now", "Where do I work now?", (r"Northwind",), ("job-now",)),
    Question("job-title", "What's my job?", (r"data engineer",), ("job-now",)),
    Question("work-before", "Where did I work before my current job?", (r"Tidewave",),
             ("job",), history=True),
    Question("city-now", "Which city do I live in?", (r"Cardiff",), ("city-now",)),
    Question("city-before", "Where did we live before we moved?", (r"Bristol",), ("city",),
             history=True),
    Question("dog-name", "What's my dog's name?", (r"Pepper",), ("dog-name",)),
    Question("dog-breed", "What breed is our dog?", (r"greyhound",), ("dog",)),
    Question("dog-old-name", "What was the dog called before we renamed her?",
             (r"Biscuit",), ("dog",), history=True),
    Question("kyoto", "Are we still going to Kyoto in April?",
             (r"Kyoto.*\b(?:off|cancel+ed|called off)\b"
              r"|\b(?:off|cancel+ed|called off)\b.*Kyoto",), ("kyoto-off",)),
    Question("holiday", "Where are we going on holiday in May?", (r"Highlands",),
             ("holiday",)),
    Question("diet", "What diet do I follow?", (r"vegan",), ("diet-now",)),
    Question("coffee", "What do I drink instead of coffee now?", (r"green tea",),
             ("coffee-now",)),
    Question("seat", "Which seat do I prefer on a plane?", (r"aisle",), ("seat-now",)),
    Question("landlord", "When should I call the landlord?", (r"landlord.*Monday",),
             ("landlord-now",)),
    Question("dinner", "Is the dinner with Priya on Saturday still happening?",
             (r"(?:called off|cancel+ed).*dinner|dinner.*(?:called off|cancel+ed)",),
             ("dinner-off",)),
    Question("name", "What's my name?", (r"\bSam\b",), ("name",)),
    Question("hometown", "Where am I originally from?", (r"York",), ("hometown",)),
    Question("partner", "What's my partner's name?", (r"Alex",), ("partner",)),
    Question("partner-job", "What does Alex teach?", (r"chemistry",), ("partner-job",)),
    Question("sister-job", "What does my sister Priya do for a living?", (r"pharmacist",),
             ("sister",)),
    Question("mum-name", "What's my mum's name?", (r"Helen",), ("mum",)),
    Question("mum-age", "How old is my mum turning in June?", (r"sixty",), ("mum",)),
    Question("party", "What are we planning for my mum's birthday?", (r"surprise party",),
             ("party",)),
    Question("tom-city", "Where does my best friend Tom live?", (r"Manchester",), ("tom",)),
    Question("wedding", "Whose wedding am I the best man at?", (r"Tom",), ("wedding",)),
    Question("wedding-when", "When is Tom getting married?", (r"September",),
             ("wedding",)),
    Question("plant", "What did I name the monstera?", (r"Gerald",), ("plant",)),
    Question("band", "What's my favourite band?", (r"Radiohead",), ("band",)),
    Question("allergy", "What am I allergic to?", (r"shellfish",), ("allergy",)),
    Question("cat", "What's the neighbours' cat called?", (r"Mochi",), ("neighbour-cat",)),
    Question("cello", "Which instrument am I learning?", (r"cello",), ("cello",)),
    Question("japanese", "When are my Japanese classes?", (r"Tuesday",), ("japanese",)),
    Question("bouldering", "What do I do on Wednesday evenings?", (r"bouldering",),
             ("bouldering",)),
    Question("degree", "What did I study at university?", (r"geography",), ("degree",)),
    Question("olives", "Which food can't I stand?", (r"olives",), ("olives",)),
    Question("film", "What's my favourite film?", (r"Spirited Away",), ("film",)),
    Question("football", "Which football team do I support?", (r"Arsenal",),
             ("football",)),
    Question("board-game", "What's our favourite board game?", (r"Wingspan",),
             ("board-game",)),
    Question("gift", "What did Alex want for their birthday?", (r"record player",),
             ("gift",)),
    Question("manager", "Who is my manager?", (r"Grace",), ("manager",)),
    Question("wfh", "Which day do I work from home?", (r"Fridays?",), ("wfh",)),
    Question("book-club", "When does my book club meet?", (r"first Thursday",),
             ("book-club",)),
    Question("jess", "Where did Jess move to?", (r"Lyon",), ("jess",)),
    Question("commute", "How do I get to work these days?", (r"train",), ("commute",)),
    Question("race", "What race am I training for?", (r"Half Marathon",), ("half",)),
    Question("garden", "What did we plant in the garden?", (r"tomatoes",), ("garden",)),
    Question("vet", "Who is Pepper's vet?", (r"Okafor",), ("vet",)),
    Question("project", "Which project am I leading at work?", (r"routing dashboard",),
             ("lead",)),
)
"""Asked after the last session, each through ``render_context`` at its defaults."""

STALE: Final[tuple[Stale, ...]] = (
    Stale("job", r"\bdata analyst at Tidewave\b|(?<!no longer )\bworks? (?:at|for) Tidewave\b"
                 r"|\bworks as a data analyst\b", "job-now"),
    Stale("city", r"\bI live in Bristol\b|\blives in Bristol\b", "city-now"),
    Stale("dog", r"\bgreyhound called Biscuit\b|\bBiscuit is the user's\b", "dog-name"),
    Stale("kyoto", r"\bI are going to Kyoto\b|\buser is going to Kyoto\b", "kyoto-off"),
    Stale("diet", r"\bI'm vegetarian\b|\buser is vegetarian\b", "diet-now"),
    Stale("coffee", r"\bI love coffee\b|\buser loves coffee\b", "coffee-now"),
    Stale("seat", r"\bI prefer window seats\b|\buser prefers window seats\b", "seat-now"),
    Stale("landlord", r"\bcall the landlord (?:about the boiler )?on Friday\b", "landlord-now"),
    Stale("dinner", r"\bWe're having dinner with Priya\b|\buser is having dinner with Priya\b",
          "dinner-off"),
    Stale("oslo", r"\buser lives in Oslo\b", "never true: a musing ('I might move to Oslo')"),
    Stale("lyon", r"\buser lives in Lyon\b", "never true: a friend moved there"),
)
"""Statements that a later turn replaced, or that were never Sam's."""
