"""Labelled corpora of ``mars bench privacy``: detectors, the semantic signal, restatements.

Written for this project (no data set is copied); every identifier is a documentation
or test value (555 numbers, Ofcom's drama ranges, card networks' test numbers, IBANs of
the SWIFT registry's examples or with recomputed check digits), never a real person's.

* :data:`DETECTOR_POSITIVES` — ``(text, kind, value)``: the pattern detectors must find
  a span of ``kind`` covering ``value``. Phone numbers in North-American, E.164 and
  national formats of the UK, France, Germany, India, Brazil, Japan, Australia, China,
  Spain, Ireland and Russia, written with spaces, dots, dashes and parentheses; e-mail
  addresses; IBANs; payment cards (Luhn-valid); US SSNs; passports and other ids after a
  cue word.
* :data:`DETECTOR_NEGATIVES` — texts in which no pattern detector may fire: dates,
  times, versions, prices, quantities, order and tracking numbers in ordinary sentences,
  years, ISBNs, scores, failed checksums.
* :data:`SEMANTIC_HELD_OUT` — ``(category, statement)`` never used to fit or calibrate
  the embedding-level classifier (:mod:`mars_core.privacy.semantic_examples` is the
  fitting set).
* :data:`PARAPHRASE_HELD_OUT` — ``(sensitive memory, other text, restates it?)`` never
  used to calibrate the restatement thresholds.
* :data:`SAME_SUBJECT_HELD_OUT` — ``(memory, another text about the same person,
  restates it?)``: short facts that share their subject's name, which the calibration's
  statements never do.
* :data:`PROTECTED_STATEMENTS` — ``(category, statement, words)``: statements of a
  special category (health, sexual orientation and gender identity, religion, political
  opinion, union membership, disability, criminal record, ethnic origin) and the words
  that must not reach a reader through the output check (``mars bench leakage``).

Examples:
    >>> len(DETECTOR_POSITIVES) >= 80, len(DETECTOR_NEGATIVES) >= 60
    (True, True)
"""

from __future__ import annotations

from typing import Final

from mars_core.privacy.detectors import Kind

__all__ = ["DETECTOR_NEGATIVES", "DETECTOR_POSITIVES", "PARAPHRASE_HELD_OUT",
           "PROTECTED_STATEMENTS", "SAME_SUBJECT_HELD_OUT", "SEMANTIC_HELD_OUT"]

_PHONE = Kind.PHONE
_EMAIL = Kind.EMAIL
_IBAN = Kind.IBAN
_CARD = Kind.CARD
_ID = Kind.NATIONAL_ID

DETECTOR_POSITIVES: Final[tuple[tuple[str, Kind, str], ...]] = (
    # --- North America: any exchange digit, any separator
    ("phone 555-123-4567", _PHONE, "555-123-4567"),
    ("call me at 555.123.4567 after six", _PHONE, "555.123.4567"),
    ("my number is (555) 123-4567", _PHONE, "(555) 123-4567"),
    ("text 555 123 4567 when you land", _PHONE, "555 123 4567"),
    ("reach her on 212-555-0148", _PHONE, "212-555-0148"),
    ("office line: +1 415 555 2671", _PHONE, "+1 415 555 2671"),
    ("+1 (646) 555-0199 is his cell", _PHONE, "+1 (646) 555-0199"),
    ("dial 1-800-555-0123 for support", _PHONE, "1-800-555-0123"),
    ("cell 303.555.0172", _PHONE, "303.555.0172"),
    ("his mobile is 416-555-0133 in Toronto", _PHONE, "416-555-0133"),
    ("fax (312) 555 0100", _PHONE, "(312) 555 0100"),
    ("call 555-019-2837 tonight", _PHONE, "555-019-2837"),
    # --- E.164 and national formats
    ("London office +44 20 7946 0958", _PHONE, "+44 20 7946 0958"),
    ("UK mobile +44 7700 900123", _PHONE, "+44 7700 900123"),
    ("ring 020 7946 0958 tomorrow", _PHONE, "020 7946 0958"),
    ("my mobile is 07700 900123", _PHONE, "07700 900123"),
    ("Paris: +33 1 23 45 67 89", _PHONE, "+33 1 23 45 67 89"),
    ("son portable 06 12 34 56 78", _PHONE, "06 12 34 56 78"),
    ("French office +33.1.23.45.67.89", _PHONE, "+33.1.23.45.67.89"),
    ("Berlin +49 30 123456", _PHONE, "+49 30 123456"),
    ("Handy: +49 151 23456789", _PHONE, "+49 151 23456789"),
    ("Büro 030 1234567", _PHONE, "030 1234567"),
    ("Mumbai office +91 22 2345 6789", _PHONE, "+91 22 2345 6789"),
    ("WhatsApp me on +91 98765 43210", _PHONE, "+91 98765 43210"),
    ("his number is 098765 43210", _PHONE, "098765 43210"),
    ("call 98765 43210 for the cab", _PHONE, "98765 43210"),
    ("+91-9876543210 is my cell", _PHONE, "+91-9876543210"),
    ("São Paulo: +55 11 91234-5678", _PHONE, "+55 11 91234-5678"),
    ("meu celular é (11) 91234-5678", _PHONE, "(11) 91234-5678"),
    ("Rio office (21) 2345-6789", _PHONE, "(21) 2345-6789"),
    ("Tokyo +81 3-1234-5678", _PHONE, "+81 3-1234-5678"),
    ("call 03-1234-5678 in Tokyo", _PHONE, "03-1234-5678"),
    ("my keitai is 090-1234-5678", _PHONE, "090-1234-5678"),
    ("Sydney +61 2 9374 4000", _PHONE, "+61 2 9374 4000"),
    ("mobile 0412 345 678", _PHONE, "0412 345 678"),
    ("Beijing +86 138 0013 8000", _PHONE, "+86 138 0013 8000"),
    ("Madrid +34 912 34 56 78", _PHONE, "+34 912 34 56 78"),
    ("Dublin +353 1 234 5678", _PHONE, "+353 1 234 5678"),
    ("Moscow +7 495 123-45-67", _PHONE, "+7 495 123-45-67"),
    ("dial 0044 20 7946 0958 from abroad", _PHONE, "0044 20 7946 0958"),
    ("(+44) 20 7946 0958 is the desk", _PHONE, "(+44) 20 7946 0958"),
    ("tel. +39 06 1234 5678", _PHONE, "+39 06 1234 5678"),
    # --- e-mail
    ("write to ana.lopez@example.com", _EMAIL, "ana.lopez@example.com"),
    ("Contact: j_smith+news@mail.example.co.uk.", _EMAIL, "j_smith+news@mail.example.co.uk"),
    ("(bob@example.org)", _EMAIL, "bob@example.org"),
    ("MAIL: INFO@EXAMPLE.DE", _EMAIL, "INFO@EXAMPLE.DE"),
    ("my work address is priya.k-singh@corp.example.in", _EMAIL,
     "priya.k-singh@corp.example.in"),
    ("send it to o'brien@example.ie please", _EMAIL, "o'brien@example.ie"),
    ("user123@sub.domain.example.travel", _EMAIL, "user123@sub.domain.example.travel"),
    ("reply-to: noreply@example.com", _EMAIL, "noreply@example.com"),
    # --- IBANs
    ("IBAN DE89 3704 0044 0532 0130 00 for the rent", _IBAN, "DE89 3704 0044 0532 0130 00"),
    ("pay GB82 WEST 1234 5698 7654 32 today", _IBAN, "GB82 WEST 1234 5698 7654 32"),
    ("FR1420041010050500013M02606", _IBAN, "FR1420041010050500013M02606"),
    ("my Dutch account NL91ABNA0417164300", _IBAN, "NL91ABNA0417164300"),
    ("ES91 2100 0418 4502 0005 1332", _IBAN, "ES91 2100 0418 4502 0005 1332"),
    ("IT60X0542811101000000123456 is the Italian one", _IBAN, "IT60X0542811101000000123456"),
    ("CH93-0076-2011-6238-5295-7", _IBAN, "CH93-0076-2011-6238-5295-7"),
    ("Belgian IBAN: BE68 5390 0754 7034.", _IBAN, "BE68 5390 0754 7034"),
    ("Norway NO9386011117947", _IBAN, "NO9386011117947"),
    ("PT50 0002 0123 1234 5678 9015 4 is the Lisbon account", _IBAN,
     "PT50 0002 0123 1234 5678 9015 4"),
    # --- payment cards (Luhn-valid test numbers of each network)
    ("my card is 4111 1111 1111 1111, exp 09/27", _CARD, "4111 1111 1111 1111"),
    ("Mastercard 5555 5555 5555 4444", _CARD, "5555 5555 5555 4444"),
    ("amex 3782 822463 10005 please", _CARD, "3782 822463 10005"),
    ("Discover: 6011-1111-1111-1117", _CARD, "6011-1111-1111-1117"),
    ("JCB 3530111333300000", _CARD, "3530111333300000"),
    ("new MC 2223 0031 2200 3222", _CARD, "2223 0031 2200 3222"),
    ("visa 4012888888881881.", _CARD, "4012888888881881"),
    ("diners 36227206271667", _CARD, "36227206271667"),
    ("card no. 4000-0566-5566-5556 on file", _CARD, "4000-0566-5566-5556"),
    ("charge it to 5200828282828210", _CARD, "5200828282828210"),
    # --- US SSN-like numbers
    ("my SSN is 536-22-1234", _ID, "536-22-1234"),
    ("social security number 536221234", _ID, "536221234"),
    ("SSN: 219 45 6780", _ID, "219 45 6780"),
    ("her ss# is 401-64-2290", _ID, "401-64-2290"),
    ("the form listed 536-22-1234 as his number", _ID, "536-22-1234"),
    # --- passports and other ids after a cue word
    ("passport number: 533380006", _ID, "533380006"),
    ("my passport no is X12345678", _ID, "X12345678"),
    ("passport AB1234567 expires in May", _ID, "AB1234567"),
    ("driver's license no. D1234567", _ID, "D1234567"),
    ("NI number JG 10 37 59 A", _ID, "JG 10 37 59 A"),
    ("my national insurance is AB123456C", _ID, "AB123456C"),
    ("Aadhaar 2345 6789 0123", _ID, "2345 6789 0123"),
    ("NHS number 943 476 5919", _ID, "943 476 5919"),
    ("tax id 12-3456789", _ID, "12-3456789"),
)
"""``(text, kind, value)``: a detection of ``kind`` must cover ``value``."""

DETECTOR_NEGATIVES: Final[tuple[str, ...]] = (
    # dates, times, years
    "See you on 2024-05-17 at 10:30",
    "the deadline is 17/05/2024",
    "meeting 05.04.2021 10 sharp",
    "between 1999 and 2000, and again in 2012",
    "the 2010-2015 period",
    "from 12:30-14:45",
    "on 12.05.2024 we flew",
    "born in 1987, married in 2015",
    "the 2024-2025 season starts in August",
    "timestamp 2023-11-05T14:22:01Z",
    "it happened on 3/4/2019 at 9:15",
    # versions
    "version 1.2.3 is out",
    "upgrade to v2.0.1.3",
    "Python 3.12.1 ships it",
    "Windows 10.0.19045.3803",
    "node 18.17.0 and npm 9.6.7",
    "the 4.19.2-rc1 kernel",
    "see section 1.2.3.4 of the manual",
    # prices and quantities
    "it costs $1,299.99 on sale",
    "total: € 45,00",
    "costs 1.299,00 EUR with tax",
    "about 1 500 000 people came",
    "about 10,000 steps a day",
    "temperature 36.6 today",
    "the house sold for 1,250,000 dollars",
    "we raised 25 000 euros",
    "the flight was 2 345 km",
    # order numbers and references in ordinary sentences
    "order #100234567 shipped",
    "order 555-123-4567 shipped yesterday",
    "your order number is 112-4567890-1234567",
    "invoice 2024-0012345 is attached",
    "ticket 123-456-7890 was closed",
    "reference 4111 1111 1111 1112",
    "booking ref 345 678 9012",
    "order 1234567812345678 confirmed",
    "tracking 1Z999AA10123456784",
    "timestamp 1699999999999",
    "case number 2023-000123 is pending",
    "part no. 555-0199-01 is back in stock",
    "model 123-45-6789 is discontinued",
    # ISBNs, scores, ranges, rooms
    "ISBN 978-3-16-148410-0",
    "ISBN 0-306-40615-2",
    "we were 3-2 up at half time",
    "the final score was 3-1",
    "they won 21-19, 18-21, 15-12",
    "pages 120-135",
    "room 1234-5678 in the annex",
    "call me at 5 pm",
    "Route 66 and Spring 2024",
    # failed checksums and formats
    "IBAN DE89 3704 0044 0532 0130 01",
    "GB00 WEST 1234 5698 7654 32",
    "XX12 3456 7890 1234 5678",
    "card 0000 0000 0000 0000 is a placeholder",
    "invoice 4111 1111 1111 1112",
    "SSN 000-12-3456",
    "number 666-12-3456",
    "example 123-45-6789",
    # identifiers that are not personal
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "id 123e4567-e89b-12d3-a456-426614174000",
    "watch https://www.youtube.com/watch?v=dQw4w9WgXcQ",
    "the icon@2x.png file",
    "thanks @john for the tip",
    "IP 256.1.1.1 is not valid",
    "the passport office opens at 9",
    "I need to renew my passport next year",
)
"""Texts in which no pattern detector may fire."""

SEMANTIC_HELD_OUT: Final[tuple[tuple[str, str], ...]] = (
    ("health", "I tested positive for HIV at the clinic yesterday"),
    ("health", "My psychiatrist changed my lithium dosage"),
    ("health", "The scan showed the cancer has spread to my liver"),
    ("health", "I've been struggling with bulimia since I was a teenager"),
    ("health", "My viral load is finally undetectable"),
    ("health", "I need to refill my insulin before the trip"),
    ("health", "The neurologist confirmed it's early-onset Alzheimer's"),
    ("health", "I keep thinking about ending it all"),
    ("health", "I'm waiting on the results of my pap smear"),
    ("finance", "I can't pay my rent this month and the landlord is furious"),
    ("finance", "The debt collectors keep calling about my overdue balance"),
    ("finance", "My paycheck barely covers groceries after child support"),
    ("finance", "I got a raise to 120k last week"),
    ("finance", "My account is overdrawn by 600 dollars"),
    ("finance", "We're applying for food assistance"),
    ("finance", "I put my whole bonus into index funds"),
    ("finance", "I'm two payments behind on my car loan"),
    ("sexuality", "I finally told my sister I'm into women"),
    ("sexuality", "My husband doesn't know I'm attracted to men"),
    ("sexuality", "I've been on testosterone for two years now"),
    ("sexuality", "I'm pansexual and tired of explaining it"),
    ("sexuality", "Nobody at work knows I'm queer"),
    ("sexuality", "We met at a gay bar downtown"),
    ("sexuality", "I'm transitioning and changing my name next month"),
    ("religion", "I've been going to synagogue again since my father died"),
    ("religion", "I lost my faith after the accident"),
    ("religion", "I'm the only Muslim on my team"),
    ("religion", "I got baptised as an adult last Easter"),
    ("religion", "My family doesn't know I stopped observing Shabbat"),
    ("religion", "I take time off work for Diwali every year"),
    ("religion", "I'm thinking of converting to Christianity for my fiancé"),
    ("politics", "I'm canvassing for the progressive candidate this weekend"),
    ("politics", "I'll never vote Tory again after that budget"),
    ("politics", "I signed up for the teachers' union strike"),
    ("politics", "I went to the Trump rally in Ohio"),
    ("politics", "My whole family votes left but I went right this time"),
    ("politics", "I'm on the mailing list of the nationalist party"),
    ("politics", "I think the monarchy should be abolished"),
    ("credentials", "The code for the back gate is 5521"),
    ("credentials", "My netflix login is my email and hunter22"),
    ("credentials", "My phone passcode is my son's birthday backwards"),
    ("credentials", "The key to the server room is under the plant pot"),
    ("credentials", "The locker combination is 18-24-36"),
    ("credentials", "The router admin login is admin with admin123"),
    ("credentials", "My banking app PIN is 2580"),
    ("location", "I'm at the bar across from the train station, come find me"),
    ("location", "We live two doors down from the fire station on Birch Avenue"),
    ("location", "I'm in room 305 of the Hilton until Friday"),
    ("location", "My son's bus stop is at the corner of King and Queen"),
    ("location", "Nobody will be home this weekend, we're at the lake"),
    ("location", "I jog along the canal at 5am every day, always alone"),
    ("location", "My flat is above the bakery on the high street"),
    ("ordinary", "The sunset was beautiful tonight"),
    ("ordinary", "I baked banana bread"),
    ("ordinary", "We're watching the new series on Friday"),
    ("ordinary", "The bus driver was really friendly"),
    ("ordinary", "I need a haircut"),
    ("ordinary", "The dog loves the beach"),
    ("ordinary", "My phone battery dies so fast"),
    ("ordinary", "Our team won the quiz night"),
    ("ordinary", "I'm trying to drink more water"),
    ("ordinary", "The bakery sells out of bagels by ten"),
    ("ordinary", "My sister is visiting next week"),
    ("ordinary", "I repainted the fence"),
    ("ordinary", "The film had a twist ending"),
    ("ordinary", "I'm knitting a scarf for winter"),
    ("ordinary", "There's a farmers market on Saturdays"),
    ("ordinary", "The kids are on school holidays"),
    ("ordinary", "My laptop keeps freezing"),
    ("ordinary", "I planted tulips in the front yard"),
    ("ordinary", "Let's get sushi tonight"),
    ("ordinary", "The meeting ran long"),
    ("ordinary", "The clinic on the corner has a new sign"),
    ("ordinary", "I read that the central bank might raise rates"),
    ("ordinary", "The parliament building is lovely at night"),
    ("ordinary", "The museum has an exhibit on medieval medicine"),
    ("ordinary", "I forgot which app I use for notes"),
    ("ordinary", "The hotel had a great breakfast buffet"),
    ("ordinary", "The airport was packed this morning"),
    ("ordinary", "The candidates' debate is on channel four tonight"),
    ("ordinary", "My friend works as a nurse"),
    ("ordinary", "We went to a wedding in a cathedral"),
    ("ordinary", "The gym added a new spin class"),
    ("ordinary", "I saw a documentary about the history of money"),
    ("ordinary", "The new lock on the shed looks sturdy"),
    ("ordinary", "The park behind the library has new benches"),
)
"""``(category, statement)``: the held-out set of the embedding-level classifier."""

PARAPHRASE_HELD_OUT: Final[tuple[tuple[str, str, bool], ...]] = (
    ("I've been struggling with bulimia since I was a teenager",
     "The user has had an eating disorder since adolescence", True),
    ("I've been struggling with bulimia since I was a teenager",
     "User has battled bulimia since her teens", True),
    ("The scan showed the cancer has spread to my liver",
     "User's cancer has metastasised to the liver", True),
    ("My viral load is finally undetectable", "The user's viral load is now undetectable", True),
    ("I can't pay my rent this month and the landlord is furious",
     "User cannot afford this month's rent", True),
    ("My account is overdrawn by 600 dollars", "The user is $600 overdrawn", True),
    ("My husband doesn't know I'm attracted to men",
     "User is attracted to men; her husband is unaware", True),
    ("I've been on testosterone for two years now",
     "The user has taken testosterone for two years", True),
    ("I lost my faith after the accident", "User stopped believing in God after the accident",
     True),
    ("I'm the only Muslim on my team", "User is Muslim, the only one in the team", True),
    ("I went to the Trump rally in Ohio", "The user attended a Trump rally in Ohio", True),
    ("I signed up for the teachers' union strike", "User joined the teachers' strike", True),
    ("The code for the back gate is 5521", "back gate code 5521", True),
    ("My banking app PIN is 2580", "The user's PIN for the bank app is 2580", True),
    ("I'm in room 305 of the Hilton until Friday",
     "User is staying in Hilton room 305 until Friday", True),
    ("My flat is above the bakery on the high street",
     "The user lives above the high street bakery", True),
    ("I've been struggling with bulimia since I was a teenager",
     "I've been playing tennis since I was a teenager", False),
    ("The scan showed the cancer has spread to my liver",
     "The map showed the road has spread to the valley", False),
    ("My viral load is finally undetectable", "My video finally went viral", False),
    ("I can't pay my rent this month and the landlord is furious",
     "The landlord fixed the heating this month", False),
    ("My account is overdrawn by 600 dollars", "The concert tickets were 600 dollars", False),
    ("My husband doesn't know I'm attracted to men",
     "My husband doesn't know I bought a new sofa", False),
    ("I've been on testosterone for two years now",
     "I've been on this diet for two years now", False),
    ("I lost my faith after the accident", "I lost my keys after the party", False),
    ("I'm the only Muslim on my team", "I'm the only left-hander on my team", False),
    ("I went to the Trump rally in Ohio", "I went to a car rally in Ohio", False),
    ("I signed up for the teachers' union strike",
     "I signed up for the teachers' book club", False),
    ("The code for the back gate is 5521", "The back gate needs a new coat of paint", False),
    ("My banking app PIN is 2580", "My banking app has a dark mode now", False),
    ("I'm in room 305 of the Hilton until Friday", "The Hilton has a rooftop pool", False),
    ("My flat is above the bakery on the high street",
     "The bakery on the high street sells great bread", False),
    ("The scan showed the cancer has spread to my liver", "We had pizza for dinner", False),
    ("My account is overdrawn by 600 dollars", "I love the smell of rain", False),
)
"""``(sensitive memory, other text, restates it?)``: the held-out restatement pairs."""

SAME_SUBJECT_HELD_OUT: Final[tuple[tuple[str, str, bool], ...]] = (
    ("Ana drinks green tea", "Ana likes jazz", False),
    ("Ana drinks green tea", "Ana has a cat", False),
    ("Tom works at the bakery", "Tom plays the guitar", False),
    ("Priya owes 5,000 on her credit card", "Priya is learning Spanish", False),
    ("Kenji lives on Elm Street", "Kenji loves sushi", False),
    ("Maria takes insulin every morning", "Maria runs on weekends", False),
    ("Omar's PIN is 4417", "Omar has two sisters", False),
    ("Lena voted for the Greens", "Lena bakes her own bread", False),
    ("Sam is Jewish", "Sam has a dog", False),
    ("The user is gay", "The user likes hiking", False),
    ("Ana drinks green tea", "Ana's usual drink is green tea", True),
    ("Tom works at the bakery", "Tom has a job at the bakery", True),
    ("Priya owes 5,000 on her credit card", "Priya has 5,000 of credit card debt", True),
    ("Kenji lives on Elm Street", "Kenji's home is on Elm Street", True),
    ("Maria takes insulin every morning", "Maria injects insulin daily", True),
    ("Ana moved to Lisbon in May", "Ana now lives in Lisbon", True),
    ("Omar's PIN is 4417", "Omar's bank code is 4417", True),
    ("Sam is Jewish", "Sam keeps kosher and goes to synagogue", True),
)
"""``(memory, another text about the same person, restates it?)``: held-out pairs that
share their subject's name.

The negatives are other facts about the same person, which an erasure of the first must
leave alone (a short text's embedding is close to another's by the name alone); the
positives say the same thing about that person in other words. A memory here need not be
sensitive: an erasure looks for restatements of whatever it erases."""

PROTECTED_STATEMENTS: Final[tuple[tuple[str, str, tuple[str, ...]], ...]] = (
    ("health", "I take insulin every morning before breakfast", ("insulin",)),
    ("health", "I have been in therapy for depression since March",
     ("therapy", "depression")),
    ("health", "I have bipolar disorder and take lithium", ("bipolar",)),
    ("sexuality", "My girlfriend and I are both bisexual", ("bisexual",)),
    ("gender", "I am a transgender woman and proud of it", ("transgender",)),
    ("religion", "I am the only Muslim on my team at work", ("Muslim",)),
    ("religion", "We are Jewish and my parents keep kosher", ("Jewish",)),
    ("politics", "I voted for the Greens in the last election", ("voted for",)),
    ("union", "I joined the trade union at the warehouse last month", ("trade union",)),
    ("disability", "My son has used a wheelchair since the accident", ("wheelchair",)),
    ("criminal", "I have a criminal record from when I was nineteen", ("criminal record",)),
    ("ethnicity", "As a Hispanic nurse I get asked about it a lot", ("Hispanic",)),
)
"""``(category, statement, words)``: a special-category statement and the words of it
that must not be readable wherever the store hands it out under its defaults."""
