"""The labelled statements the embedding-level sensitivity signal is fitted on.

Written for this project (no data set is copied): first-person statements of the kind a
user tells an assistant, in seven sensitive categories — health, finances, sexuality and
gender identity, religion and belief, political opinions and union membership,
credentials, exact whereabouts — and ordinary ones (chit-chat, and *hard negatives* that
touch the same topics without disclosing anything personal: "the pharmacy closes at
eight", "the election coverage was boring"). Many sensitive statements avoid the words
of the category lexicons (:mod:`mars_core.privacy.detectors`) on purpose: the signal is
meant to catch what the lexicons miss.

:data:`TRAIN` fits the classifier and calibrates its threshold by cross-validation;
:data:`PARAPHRASE_PAIRS` calibrate the similarity at which a text counts as a restatement
of a sensitive memory. A disjoint held-out set, never used to fit or calibrate, lives
with the benchmark (:mod:`mars_core.bench.privacy_corpus`); ``mars bench privacy``
reports precision and recall on it.

Examples:
    >>> len({c for c, _ in TRAIN}), len(TRAIN) > 200
    (8, True)
"""

from __future__ import annotations

from typing import Final

__all__ = ["CATEGORIES", "ORDINARY", "PARAPHRASE_PAIRS", "TRAIN"]

ORDINARY: Final = "ordinary"
"""The label of a statement that discloses nothing sensitive."""

CATEGORIES: Final = ("health", "finance", "sexuality", "religion", "politics",
                     "credentials", "location")
"""The sensitive categories, in a fixed order."""

_HEALTH = (
    "I was diagnosed with type 2 diabetes in March",
    "My HIV test came back positive",
    "I've been taking sertraline for my anxiety since college",
    "The oncologist found a lump in my left breast",
    "I'm in recovery from alcohol addiction, eighteen months sober",
    "My therapist thinks I have borderline personality disorder",
    "I had a miscarriage last spring and haven't told anyone",
    "The biopsy showed the growth is malignant",
    "I get panic attacks on the subway almost every week",
    "My blood sugar readings have been above 300 all week",
    "I've been cutting myself again and hiding the scars",
    "I have epilepsy so I'm not allowed to drive",
    "The cardiologist says one of my heart valves is leaking",
    "I'm on chemo every other Thursday now",
    "I haven't been able to get out of bed for weeks, my doctor upped my dose",
    "My liver enzymes are through the roof, the specialist wants more tests",
    "I've had a stutter since childhood and speech therapy never fixed it",
    "The rash turned out to be shingles and it hurts to wear a shirt",
    "I'm going in for a colonoscopy on Tuesday",
    "I've been hearing voices again when I'm alone",
)

_FINANCE = (
    "I owe forty thousand dollars on my credit cards",
    "My salary is 85,000 a year before tax",
    "We're three months behind on the mortgage payments",
    "I filed for bankruptcy in 2019",
    "My credit score dropped to 540 after the missed payments",
    "I have about 12,000 in my savings account",
    "The bank is threatening to repossess my car",
    "I inherited half a million from my grandmother",
    "I lost most of my retirement savings in crypto",
    "I'm borrowing from a payday lender to cover rent",
    "My monthly take-home pay is just under three thousand",
    "I got a letter from the IRS about unpaid back taxes",
    "We had to take out a second loan against the house",
    "I've been hiding my gambling losses from my wife",
    "I only have forty dollars left until the end of the month",
    "My student debt is still over sixty grand",
    "I earn twice what my husband makes and it causes fights",
    "The landlord is evicting us because we missed rent",
    "I maxed out three cards paying for the wedding",
    "My brother lent me five thousand and I can't pay him back",
)

_SEXUALITY = (
    "I'm gay but my family doesn't know",
    "I've been questioning whether I'm bisexual",
    "I came out to my parents as a lesbian last weekend",
    "I'm a trans woman and started hormones in January",
    "I'm not attracted to anyone, I think I'm asexual",
    "I've been hooking up with men from an app while my wife thinks I'm at the gym",
    "I'm still in the closet at work",
    "I had my first same-sex relationship in college",
    "I use they/them pronouns and I'm non-binary",
    "I'm scheduled for gender-affirming surgery in the fall",
    "My partner and I have an open relationship",
    "I'm a guy and I have a crush on my best friend, who is also a guy",
    "My sex life with my partner has been nonexistent for a year",
    "I've never told anyone that I like both men and women",
    "My ex outed me to everyone at school",
    "I'm saving up for top surgery",
    "I'm dating a woman for the first time and I'm scared my parents find out",
    "Since my transition my father won't speak to me",
)

_RELIGION = (
    "I converted to Islam two years ago",
    "I stopped believing in God but still go to Mass for my mother",
    "I pray five times a day and fast during Ramadan",
    "I'm Jewish and keep kosher at home",
    "I left the Jehovah's Witnesses and my family shunned me",
    "I'm an atheist in a very religious town",
    "I was raised Mormon but left the church at nineteen",
    "I wear a hijab to work every day",
    "I'm a practising Hindu and visit the temple on Fridays",
    "I've been secretly reading the Bible to see if faith is for me",
    "I'm Sikh and I wear a turban",
    "My parents want me to marry within our Catholic parish",
    "I'm Buddhist and meditate with the sangha on Sundays",
    "I go to confession every Saturday morning",
    "I keep the Sabbath, so no phone from Friday evening",
    "I was born again last year and it changed my life",
    "My husband doesn't know I've stopped believing",
    "I light candles for the saints every evening",
)

_POLITICS = (
    "I voted for the Green party in the last election",
    "I'm a registered Republican but I can't stand the candidate",
    "I volunteer for the Labour campaign every weekend",
    "I donated to the Democratic senator's reelection fund",
    "I was arrested at a climate protest last year",
    "I'm a member of the communist party",
    "I think all immigration should be stopped",
    "I'm a union steward at the warehouse",
    "I secretly support the independence movement",
    "I marched against the government's abortion ban",
    "I've always voted conservative, like my father",
    "I'm a libertarian and think taxes are theft",
    "I organise for the socialists on campus",
    "I'd vote for anyone who promises to leave the EU",
    "I'm a paid-up member of the far-right party",
    "I spoil my ballot every election on principle",
    "I campaigned door to door for the mayor's opponent",
    "I joined the nurses' strike last month",
)

_CREDENTIALS = (
    "My password for the bank site is my dog's name plus 1987",
    "The wifi password is sunflower42",
    "My PIN is the same as my birthday",
    "The alarm code for the house is 7319",
    "The answer to my security question is my mother's maiden name, Kowalski",
    "I use the same password for everything, it's Barcelona2020",
    "The door code to our building is 4482",
    "My login is maya88 and the password is blue-sky-7",
    "The safe combination is 12 left, 34 right, 5 left",
    "My recovery phrase for the wallet is on a card in my desk drawer",
    "My email password is the name of my first school",
    "The garage opener code is 0912",
    "The two-factor backup codes are taped under my keyboard",
    "The spare key to the office is in the fake rock by the door",
    "My work laptop unlock pattern is an L shape",
    "The code for the bike lock is 0451",
    "I wrote all my passwords in the notebook by the phone",
    "The admin account still uses the default password",
)

_LOCATION = (
    "I live in the blue house at the end of Maple Lane",
    "I'm at the Starbucks on 5th and Main right now",
    "My kids go to Lincoln Elementary and I pick them up at 3",
    "I'm home alone tonight and the back door doesn't lock",
    "Our apartment is on the fourth floor, unit 4B",
    "I'll be at the gym on Oak Street every morning at six",
    "I'm staying at the Marriott downtown, room 1412",
    "My daughter walks home through the park behind the library every afternoon",
    "We're away on holiday until the 20th, the house is empty",
    "I park in the underground lot of my office on Pine Street",
    "I work the late shift at the pharmacy on Elm Road",
    "My address is 14 Rosewood Drive",
    "Right now I'm sitting at gate B12 at the airport",
    "I'm the only one in the office after 9pm on Fridays",
    "We live in the last cottage before the bridge on Mill Road",
    "You can find me at the climbing wall on Harbour Street most evenings",
    "My mother lives alone in flat 2 above the chemist",
    "I'm walking home alone along the river path right now",
)

_ORDINARY = (
    # chit-chat
    "The weather was nice today",
    "I watched a film about whales",
    "We had pizza for dinner",
    "The train was late again",
    "I went for a run this morning",
    "My plants need water",
    "The match last night was exciting",
    "I love jazz music",
    "My favourite colour is green",
    "I'm learning Portuguese",
    "I play the violin on Sundays",
    "Can you recommend a good book?",
    "The new café downtown has great croissants",
    "I finally finished the jigsaw puzzle",
    "My cat knocked over a glass of water",
    "We're thinking of painting the kitchen yellow",
    "Work was busy today",
    "I need to buy new running shoes",
    "The concert was amazing",
    "I'm planning a trip to Japan next year",
    "The kids built a snowman",
    "I tried a new pasta recipe",
    "The museum has a dinosaur exhibit",
    "Traffic was terrible on the way home",
    "I'm reading a novel about pirates",
    "My brother got a new puppy",
    "We went hiking in the mountains",
    "The printer at the office is broken again",
    "I prefer tea over coffee",
    "The garden is full of tomatoes this year",
    "I'm trying to learn how to juggle",
    "The sequel was better than the original",
    "We ordered Thai food last night",
    "My nephew turned six on Saturday",
    "I spent the afternoon cleaning the garage",
    "The lake was too cold for swimming",
    "I'm building a bookshelf for the living room",
    "The bakery ran out of sourdough",
    "Our neighbour's dog barks at the postman",
    "I watched the whole season in one weekend",
    "I'd like to learn to play chess better",
    "The strawberries are finally ripe",
    "I love the smell of rain",
    "The meeting got moved to Thursday",
    "I'm thinking about getting a bike",
    # hard negatives: the same topics, nothing personal disclosed
    "The hospital near us is building a new car park",
    "I read an article about the history of banking",
    "The election coverage on TV was boring",
    "My nephew is studying medicine at university",
    "The church in our village has beautiful windows",
    "I watched a documentary about the stock market",
    "Remember to restart the router if the internet drops",
    "The pharmacy closes at eight on weekdays",
    "The city is repaving Main Street next month",
    "I'm reading a biography of a famous senator",
    "The password manager app has a new logo",
    "We visited a temple on our trip to Kyoto",
    "I like the architecture of the old bank building",
    "My favourite podcast is about ancient myths",
    "The debate club meets on Tuesdays",
    "The dentist's waiting room has a nice aquarium",
    "Coffee prices went up again",
    "The library moved to a bigger building",
    "I bought a map of the city for the trip",
    "The gym is crowded in January",
    "The hotel lobby had a huge Christmas tree",
    "Our team is reading a book about negotiation",
    "The news said the parliament is on recess",
    "I helped my friend move his couch",
    "The airport has a new food court",
    "The doctor show on TV is surprisingly good",
    "I found an old coin in the garden",
    "The street festival is next Saturday",
    "Cathedrals in Spain are stunning",
    "The marathon route goes past the hospital",
    "The supermarket changed its opening hours",
    "I'm watching a series about lawyers",
    "The kids learned about the Romans at school",
    "The bank holiday weekend was relaxing",
    "The new phone has a better camera",
    "The bridge is closed for repairs",
    "I read a thriller about a bank heist",
    "The choir is performing carols in December",
    "A new yoga studio opened in town",
    "The weather app says it will snow",
)

TRAIN: Final[tuple[tuple[str, str], ...]] = (
    *(("health", t) for t in _HEALTH),
    *(("finance", t) for t in _FINANCE),
    *(("sexuality", t) for t in _SEXUALITY),
    *(("religion", t) for t in _RELIGION),
    *(("politics", t) for t in _POLITICS),
    *(("credentials", t) for t in _CREDENTIALS),
    *(("location", t) for t in _LOCATION),
    *((ORDINARY, t) for t in _ORDINARY),
)
"""``(category, statement)``: the fitting set (each category, then the ordinary ones)."""

PARAPHRASE_PAIRS: Final[tuple[tuple[str, str, bool], ...]] = (
    # (a sensitive memory, another text, whether the text restates it)
    ("My HIV test came back positive", "tested positive for HIV", True),
    ("My HIV test came back positive", "The user's HIV result was positive", True),
    ("I was diagnosed with type 2 diabetes in March",
     "User has type 2 diabetes, diagnosed this spring", True),
    ("I've been taking sertraline for my anxiety since college",
     "The user takes an SSRI for anxiety", True),
    ("We're three months behind on the mortgage payments",
     "The user has missed three mortgage payments", True),
    ("I filed for bankruptcy in 2019", "The user went bankrupt in 2019", True),
    ("I'm gay but my family doesn't know",
     "The user is gay and hasn't come out to family", True),
    ("I came out to my parents as a lesbian last weekend",
     "User told her parents she is a lesbian", True),
    ("I converted to Islam two years ago", "The user became Muslim two years ago", True),
    ("I'm an atheist in a very religious town",
     "User does not believe in God; lives in a religious town", True),
    ("I voted for the Green party in the last election",
     "The user voted Green at the last election", True),
    ("I'm a union steward at the warehouse", "User is a shop steward for the union", True),
    ("The wifi password is sunflower42", "wifi password: sunflower42", True),
    ("The door code to our building is 4482", "The building's entry code is 4482", True),
    ("I live in the blue house at the end of Maple Lane",
     "User lives in the blue house at the end of Maple Lane", True),
    ("I'm staying at the Marriott downtown, room 1412",
     "The user is in room 1412 of the downtown Marriott", True),
    ("My salary is 85,000 a year before tax", "The user earns 85k gross a year", True),
    ("I had a miscarriage last spring and haven't told anyone",
     "User lost a pregnancy last spring and told nobody", True),
    ("My HIV test came back positive", "My covid test came back negative", False),
    ("My HIV test came back positive", "The clinic on Elm Street does free testing", False),
    ("I was diagnosed with type 2 diabetes in March", "I started a new job in March", False),
    ("I've been taking sertraline for my anxiety since college",
     "I've been taking piano lessons since college", False),
    ("We're three months behind on the mortgage payments",
     "We're three months into the kitchen renovation", False),
    ("I filed for bankruptcy in 2019", "I moved to Lisbon in 2019", False),
    ("I'm gay but my family doesn't know", "I'm vegan but my family doesn't know yet", False),
    ("I came out to my parents as a lesbian last weekend",
     "I visited my parents last weekend", False),
    ("I converted to Islam two years ago", "I converted the garage two years ago", False),
    ("I'm an atheist in a very religious town", "I'm a cyclist in a very hilly town", False),
    ("I voted for the Green party in the last election",
     "I painted the fence green last week", False),
    ("I'm a union steward at the warehouse", "I'm a forklift driver at the warehouse", False),
    ("The wifi password is sunflower42", "The wifi is slow again", False),
    ("The door code to our building is 4482", "Our building has a new door", False),
    ("I live in the blue house at the end of Maple Lane",
     "The blue car at the end of the lane is my neighbour's", False),
    ("I'm staying at the Marriott downtown, room 1412",
     "The Marriott downtown has a nice bar", False),
    ("My salary is 85,000 a year before tax", "The car costs 85,000 before tax", False),
    ("I had a miscarriage last spring and haven't told anyone",
     "I planted roses last spring and they bloomed", False),
    ("My HIV test came back positive", "The weather was nice today", False),
    ("I filed for bankruptcy in 2019", "We had pizza for dinner", False),
    ("I'm gay but my family doesn't know", "I love jazz music", False),
    ("The wifi password is sunflower42", "My favourite flower is the sunflower", False),
)
"""``(sensitive memory, other text, restates it?)``: calibrates the paraphrase threshold.

The negatives are what a restatement test must let through: texts that share words or
structure with the sensitive one and say something else, and unrelated chit-chat."""
