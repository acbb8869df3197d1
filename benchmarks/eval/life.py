"""A simulated life: one person's 120 days with an agent, then questions about them.

Noor, a data analyst in Rotterdam, tells her agent about her days from 5 February to 3 June
2024, and the agent saves what she says, about 1,000 memories at the hours she says them. The
material is frozen below and hand-written: fifteen stable facts said two to five times in
different words over the months; twenty-five everyday facts that change once (three of them
twice) mid-way, some with a cue word ("switched", "cancelled", "took over"), some with none
(just a different value said later); about forty one-off events with dates, places and people;
twelve topics told over weeks where each telling adds a detail; side remarks that look like
facts but are not ("my legs are jelly", "I basically live at the office"); two details of
one party (guest count, theme) told apart; and plenty of low-information daily notes and
chit-chat, some sharing words with the facts (work, coffee, gym, tram). A fixed seed spreads
the restatements, daily notes and chit-chat over the days; the events and topic tellings are
on their own dates.

Two arms see the same saves: ``rem`` runs one REM cycle (offline synthesiser) every night at
03:00, ``no-rem`` never does. A day after the last save both are asked the same questions:
the current value of every changed fact, the stable facts, event and topic details, both party
details, and eight things never mentioned. Measured per arm: found = the answer phrase is in
the text of ``inject(q, 100)`` (default relevance floor), and at 300; stale = an earlier value
of a changed fact is in that pack; tokens of the packs for never-mentioned questions (mean,
max) and of the answerable ones (mean); live memories and their tokens at the end.
"""

from __future__ import annotations

import random
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.eval.report import mean, table
from remd import Memory

SEED = 20240205
START = datetime(2024, 2, 5, tzinfo=UTC).timestamp()  # day 0, a Monday
DAYS = 120
QUICK_DAYS = 60
BUDGETS = (100, 300)
DAY = 86_400.0
REM_HOUR = 3.0


@dataclass(frozen=True)
class Stable:
    """A fact that holds all along, said in different words on different days."""

    question: str
    answer: str  # in every saying
    sayings: tuple[str, ...]


@dataclass(frozen=True)
class State:
    """One value of a changing fact, from ``day``; its first saying is said that day."""

    day: int
    phrase: str  # in every saying of this value, and in no other memory
    sayings: tuple[str, ...]


@dataclass(frozen=True)
class Change:
    question: str
    states: tuple[State, ...]


# -- stable facts ---------------------------------------------------------------------------
STABLE = (
    Stable("How do I take my coffee?", "black", (
        "I take my coffee black.",
        "Black coffee, always, no sugar.",
        "coffee, black, like every morning",
        "They keep putting milk in my flat white at the new café, I literally asked for it "
        "black.",
    )),
    Stable("What am I allergic to?", "shellfish", (
        "I'm allergic to shellfish, the proper kind, EpiPen in my bag and everything.",
        "No prawns for me please, shellfish allergy.",
        "Had to send the paella back, there were mussels in it and I can't do shellfish.",
    )),
    Stable("What's my cat called?", "Nougat", (
        "Our cat Nougat is eight and she runs this house.",
        "Nougat knocked a full mug off my desk in the middle of a call.",
        "Nougat has discovered the radiator shelf and will not be moved.",
    )),
    Stable("When is my birthday?", "October", (
        "My birthday's on the 9th of October, just so you have it.",
        "Born on October 9th. Libra, not that I believe in that stuff.",
    )),
    Stable("Where does my sister live?", "Utrecht", (
        "My sister Lotte lives in Utrecht, five minutes from the Dom tower.",
        "Train to Lotte's place in Utrecht on Sunday, she needs help with the baby room.",
        "Lotte loves Utrecht too much to ever move, I've given up trying.",
    )),
    Stable("What do I play on Thursday evenings?", "volleyball", (
        "Volleyball every Thursday night with my team, we're called the Spikey Bits.",
        "Thursday is volleyball, don't let me book anything on Thursdays.",
        "Bought new knee pads for volleyball, the old ones were held together by tape.",
    )),
    Stable("Who's my favourite band?", "Radiohead", (
        "Radiohead is my favourite band of all time, OK Computer rewired my brain at 15.",
        "Nothing beats Radiohead on a grey morning with headphones on.",
        "Put on In Rainbows while cooking. Radiohead never gets old.",
    )),
    Stable("Where do my parents live?", "Groningen", (
        "My parents still live in Groningen, in the house I grew up in.",
        "Mum and Dad are driving down from Groningen next weekend.",
    )),
    Stable("What kind of milk do I use?", "oat milk", (
        "Porridge with oat milk and a banana, every single morning.",
        "Cow's milk doesn't agree with me, it's oat milk or nothing.",
        "We're out of oat milk again, who finished it.",
    )),
    Stable("Which herb can't I stand?", "coriander", (
        "I can't stand coriander, it tastes like soap to me.",
        "Asked them to leave the coriander off, as always.",
    )),
    Stable("Who's my oldest friend?", "Teun", (
        "Teun is my oldest friend, we've known each other since we were six.",
        "Beers with Teun tonight, like old times.",
        "Teun still calls me by my childhood nickname and I hate it.",
    )),
    Stable("Which hand do I write with?", "left-handed", (
        "Being left-handed, every pair of scissors in this office is a torture device.",
        "I'm left-handed, so sitting on the right end of the table at dinners is a must.",
    )),
    Stable("Do I eat meat?", "pescatarian", (
        "I'm pescatarian, so fish yes, meat no.",
        "Six years pescatarian this month and I really don't miss meat.",
        "Told the caterer I'm pescatarian, hopefully they listen this time.",
    )),
    Stable("What did I study at university?", "econometrics", (
        "I studied econometrics in Tilburg, which explains my thing with spreadsheets.",
        "My econometrics degree finally paid off, I was the only one in the room who could "
        "read the regression output.",
    )),
    Stable("What's my partner's name?", "Joost", (
        "My partner Joost and I have been together almost eight years.",
        "Joost is the cook in this house, I'm on dishes.",
        "Joost says hi, by the way.",
        "Joost snores when he's tired, last night was a chainsaw.",
    )),
)

# -- everyday facts that change --------------------------------------------------------------
CHANGES = (
    Change("How do I get to work these days?", (
        State(1, "bike", (
            "I ride my bike to work every day, it's about twenty minutes along the river.",
            "The bike ride to the office is honestly the best part of my day.",
            "Forgot my bike lights again and had to walk home in the dark like an idiot.",
        )),
        State(38, "tram", (
            "Someone stole my bicycle from outside the station last night. Taking the tram to "
            "work until I sort something out.",
            "Still on the tram every morning, and honestly I don't miss cycling in the rain.",
            "The tram to work takes 25 minutes door to door, I read the whole way.",
        )),
    )),
    Change("Which company do I work for?", (
        State(0, "Hollander", (
            "I'm a data analyst at Hollander Freight, mostly route and fuel stuff.",
            "Hollander announced another reorg today, third one since I joined.",
        )),
        State(70, "Kestrel", (
            "First day at Kestrel Health! New badge, new desk, new everything.",
            "Kestrel is so much calmer than my last job, nobody sends emails after six.",
            "Two weeks in at Kestrel and I actually like everyone on my floor.",
        )),
    )),
    Change("Who is my team lead?", (
        State(2, "Ramon", (
            "My team lead Ramon is great but he's stretched way too thin.",
            "Ramon cancelled our one-on-one again, that's three in a row.",
        )),
        State(24, "Ingrid", (
            "Big news at work: our lead is off to the Singapore office and Ingrid took over the "
            "team as of today.",
            "Ingrid wants weekly updates in writing now, fine by me.",
            "One-on-one with Ingrid, she's very direct. I like it.",
        )),
        State(71, "Dalia", (
            "My new team lead at Kestrel is Dalia, she was a nurse for ten years before she "
            "went into data.",
            "Dalia blocked out Friday afternoons as focus time for the whole team, love her.",
        )),
    )),
    Change("What laptop do I use for work?", (
        State(6, "Dell", (
            "My work laptop is a Dell XPS that sounds like a jet engine on every video call.",
            "The Dell froze twice during the demo, I wanted to throw it in the Maas.",
        )),
        State(70, "MacBook", (
            "IT handed me a MacBook Pro this morning. Haven't used a Mac in ten years.",
            "Getting used to the MacBook, I keep hitting the wrong key for copy-paste.",
        )),
    )),
    Change("What time does my alarm go off?", (
        State(3, "6:45", (
            "Alarm at 6:45 every weekday, snooze once, that's the rule.",
            "Setting the alarm for 6:45 again, the weekend went way too fast.",
        )),
        State(49, "7:15", (
            "Moved the alarm to 7:15 now that the tram stop is right outside the new place.",
            "7:15 alarm and I'm still somehow late, explain that.",
        )),
        State(72, "6:30", (
            "Alarm's at 6:30 from now on, standup at Kestrel is at 8:15.",
            "6:30 alarm is brutal but I'm home by five, so worth it.",
        )),
    )),
    Change("What street do I live on?", (
        State(4, "Binnenweg", (
            "Our flat on the Nieuwe Binnenweg is tiny but the bakeries downstairs make up for it.",
            "The Nieuwe Binnenweg on a Saturday is chaos, couldn't even get to our front door.",
        )),
        State(47, "Avenue Concordia", (
            "Moved! We officially live on Avenue Concordia in Kralingen now. Boxes everywhere.",
            "Love the big trees on Avenue Concordia, the street is so quiet at night.",
        )),
    )),
    Change("How much do we pay for housing every month?", (
        State(8, "1,450", (
            "Rent went up again, 1,450 a month for 55 square metres.",
            "Paid the rent, 1,450 gone just like that.",
        )),
        State(52, "1,280", (
            "First mortgage payment went out today, 1,280. Less than we paid in rent, how is that "
            "even fair.",
        )),
    )),
    Change("Where do I do the grocery shopping?", (
        State(5, "Albert Heijn", (
            "Big shop at the Albert Heijn this morning, the queue was insane.",
            "The Albert Heijn bonus card saved me twelve euros today, I'm a genius.",
        )),
        State(50, "Lidl", (
            "There's a Lidl round the corner from the new flat, so that's where the weekly shop "
            "happens now.",
            "Lidl had the good sourdough again, bought two.",
        )),
    )),
    Change("Who is my GP?", (
        State(10, "Brouwer", (
            "Saw my GP, Dr. Brouwer, about the thyroid results. She wants to recheck in six "
            "weeks.",
            "Dr. Brouwer's assistant finally called me back after three days.",
        )),
        State(60, "Okafor", (
            "Registered with a GP practice in Kralingen, Dr. Okafor. Seems nice and very "
            "thorough.",
            "Dr. Okafor's practice has an app for repeat prescriptions, amazing.",
        )),
    )),
    Change("Where do I work out these days?", (
        State(1, "Fitlab", (
            "Signed up at Fitlab on the Westblaak in January, trying to actually go three times "
            "a week.",
            "Fitlab was empty at 7am, I had the whole squat rack to myself.",
        )),
        State(58, "bouldering", (
            "Cancelled the gym membership. Going to the bouldering hall in Kralingen instead, "
            "it's five minutes from the flat and way more fun.",
            "Bouldering twice this week, my forearms are on fire.",
            "Got a ten-session card at the bouldering place, cheaper that way.",
        )),
    )),
    Change("What phone do I have?", (
        State(9, "Pixel", (
            "My Pixel 6 is dead by 3pm every day, the battery is done.",
            "Cracked the corner of my Pixel screen, it was already on its last legs.",
        )),
        State(33, "iPhone", (
            "Got the iPhone 15 today, spent the whole evening moving my apps over.",
            "The iPhone camera is ridiculous, look at this sunset over the bridge.",
        )),
    )),
    Change("What dose of levothyroxine am I on?", (
        State(10, "50 mcg", (
            "I take 50 mcg of levothyroxine every morning, half an hour before anything else.",
            "Reminder to self: refill the 50 mcg levothyroxine before the weekend.",
        )),
        State(65, "75 mcg", (
            "Dr. Okafor bumped my levothyroxine up to 75 mcg, my TSH was still too high.",
            "The 75 mcg tablets are a different colour, almost took two this morning.",
        )),
    )),
    Change("What tea do I drink before bed?", (
        State(7, "chamomile", (
            "Chamomile before bed or I don't sleep, simple as that.",
            "Out of chamomile. This is a crisis.",
        )),
        State(74, "rooibos", (
            "Rooibos with a bit of honey, every night before bed.",
            "Stocked up on rooibos, three boxes, we're set for a while.",
        )),
    )),
    Change("Who's my dentist?", (
        State(12, "Verhoeven", (
            "Dentist with Dr. Verhoeven on Thursday, dreading it.",
            "Wisdom tooth came out at Dr. Verhoeven's, I look like a hamster.",
        )),
        State(90, "Amrani", (
            "Dentist at 2 today. Dr. Amrani says my gums look a lot better.",
            "Dr. Amrani's practice sends a reminder text a week ahead, so civilised.",
        )),
    )),
    Change("Who teaches my Portuguese class?", (
        State(3, "Beatriz", (
            "Portuguese class tonight, Beatriz made us order food in a pretend café for an hour.",
            "Beatriz says my pronunciation is very Dutch, which is fair.",
        )),
        State(50, "Duarte", (
            "We have a new Portuguese teacher, Duarte. He's from Braga and talks super fast.",
            "Duarte had us role-play a job interview in Portuguese, I nearly died.",
        )),
    )),
    Change("What does Nougat eat?", (
        State(11, "Royal Canin", (
            "Nougat only eats the Royal Canin indoor kibble, she's a snob.",
            "Bought a 4 kg bag of Royal Canin, should last about a month.",
        )),
        State(62, "k/d", (
            "The vet put Nougat on Hill's k/d, the kidney one. She is not impressed.",
            "Nougat finally eats the k/d without staring at me like I betrayed her.",
        )),
    )),
    Change("What car do we have?", (
        State(15, "Greenwheels", (
            "We don't own a car, we use Greenwheels when we need one and it works fine.",
            "Booked a Greenwheels for Saturday so we can do the big IKEA run.",
        )),
        State(95, "Yaris", (
            "We bought a car!! A second-hand Toyota Yaris hybrid from 2019, dark blue.",
            "The Yaris needs a wash, the birds found it.",
        )),
    )),
    Change("What running shoes do I wear?", (
        State(6, "Brooks", (
            "My Brooks Ghost have about 600 km on them, I should think about new ones.",
            "The Brooks still feel fine, I'll keep them for now.",
        )),
        State(30, "Hoka", (
            "Switched to Hoka Cliftons, it's like running on marshmallows.",
            "The Hokas were great on the long run today, no sore shins.",
        )),
    )),
    Change("What book is my book club reading?", (
        State(3, "Pachinko", (
            "Book club picked Pachinko for February, it's enormous.",
            "Halfway through Pachinko and it's devastating.",
        )),
        State(35, "Klara", (
            "Next book club book is Klara and the Sun. Shorter, at least.",
            "Finished Klara and the Sun on the sofa, cried a bit, don't tell anyone.",
        )),
        State(70, "Demon Copperhead", (
            "Sanne picked Demon Copperhead for book club. 560 pages. She's insane.",
            "Demon Copperhead is so good I nearly missed my stop.",
        )),
    )),
    Change("Which password manager do I use?", (
        State(13, "LastPass", (
            "All my passwords are in LastPass, which maybe isn't great after that breach.",
            "LastPass logged me out on my phone again, third time this week.",
        )),
        State(40, "Bitwarden", (
            "Everything's in Bitwarden now, finally. Took me all of Sunday.",
            "Got Joost set up on Bitwarden too, we share a family vault now.",
        )),
    )),
    Change("Where do I buy my coffee beans?", (
        State(4, "Man Met Bril", (
            "Picked up beans at Man Met Bril, the Ethiopian one again.",
            "The new Kenyan from Man Met Bril is a bit too sour for me.",
        )),
        State(57, "Ripple Roasters", (
            "Started a bean subscription with Ripple Roasters, a bag every two weeks through the "
            "letterbox.",
            "Ripple Roasters sent a Colombian this time, really nice and chocolatey.",
        )),
    )),
    Change("Where are we going on holiday this summer?", (
        State(16, "Sicily", (
            "Joost and I are thinking Sicily for the summer, two weeks, maybe rent a car.",
            "Looking at farm stays in Sicily, they all look amazing.",
        )),
        State(66, "Crete", (
            "Booked it! Two weeks in Crete in July, flights plus a little apartment in Chania.",
            "The Crete guidebook arrived, Joost has already dog-eared half of it.",
        )),
    )),
    Change("What does Joost do for work?", (
        State(9, "primary school", (
            "Joost teaches group 6 at a primary school in Delfshaven, he's wrecked by Friday.",
            "Joost has parent evenings at the primary school all week, I barely see him.",
        )),
        State(88, "carpentry", (
            "Joost quit teaching and started a carpentry apprenticeship this week at a workshop "
            "in Zuid. I'm so proud of him.",
            "Joost built a little shelf for the hallway, the carpentry thing is really working "
            "out.",
        )),
    )),
    Change("What is the route planning project at work called?", (
        State(2, "Lantern", (
            "Most of my week goes into Lantern, our route planning tool for the trucks.",
            "Lantern demo for the ops managers went fine, nobody fell asleep.",
        )),
        State(30, "RouteWise", (
            "Marketing renamed our route planner, it's called RouteWise from now on. I'll be "
            "saying the old name for months.",
            "RouteWise now has its own logo, a little truck with a tick. Cute.",
        )),
    )),
    Change("Who's our internet provider?", (
        State(18, "Ziggo", (
            "Ziggo is down again, I'm working from the café downstairs.",
            "On hold with Ziggo for forty minutes, the music is burned into my brain.",
        )),
        State(48, "Odido", (
            "The Odido guy came to hook up the internet at the new place, fibre, so fast.",
            "Odido sent the first bill, cheaper than I expected.",
        )),
    )),
)

# -- one-off events: (day, hour, text) --------------------------------------------------------
EVENTS = (
    (3, 22.5, "Drinks with the volleyball team after the match, we lost 3-1 but the bitterballen "
              "were good."),
    (5, 21.0, "Dinner at Teun's new place in Schiedam, he made a lasagne big enough for twelve."),
    (8, 23.0, "Joost and I saw Dune Part Two at the Pathé on the Schouwburgplein. Way too loud, "
              "loved it."),
    (12, 15.0, "Lunch with Femke from my uni days at Dudok, she's moving to Copenhagen in the "
               "spring."),
    (15, 12.5, "Fire alarm at the office at 11, we stood outside in the drizzle for forty "
               "minutes."),
    (19, 18.0, "Went to the Kunsthal with Lotte for the photo exhibition, she's really showing "
               "now."),
    (22, 22.0, "Power cut on the whole street for three hours tonight, we played cards by "
               "candlelight."),
    (26, 23.5, "Mira's hen do in Antwerp! Karaoke until 3am, my voice is completely gone."),
    (31, 17.0, "Performance review: exceeds expectations, but no raise because of the reorg."),
    (34, 19.0, "Mum came to visit, we took her to the Markthal and she bought way too much "
               "cheese."),
    (39, 18.5, "Ran into Yusuf, my old flatmate, at Rotterdam Centraal! He's a dad now, two "
               "kids."),
    (43, 13.0, "Donated blood at Sanquin for the first time. They'll post me a donor card. "
               "Felt a bit woozy after."),
    (53, 23.0, "Housewarming drinks tonight, 20 people in our living room and the neighbours "
               "didn't complain once."),
    (55, 14.0, "Easter brunch at Lotte's, she made a ridiculous amount of paasbrood."),
    (61, 19.0, "Volleyball tournament in Delft today, we came third out of twelve teams!"),
    (63, 20.0, "The washing machine leaked all over the bathroom floor. The plumber charged 180 "
               "euros to replace one hose."),
    (67, 21.0, "Farewell drinks at work, they gave me a huge monstera and a card signed by the "
               "whole floor."),
    (69, 20.0, "Quiet Sunday before the new job, made a lasagne and ironed three shirts like a "
               "real adult."),
    (75, 14.0, "Team lunch with the new colleagues, a Thai place on the Witte de Withstraat."),
    (78, 18.0, "Got stung by a wasp on the balcony, my hand is twice its normal size."),
    (80, 22.5, "Our anniversary, eight years! Dinner at Restaurant Fitz, the tasting menu, Joost "
               "teared up at dessert."),
    (82, 20.0, "King's Day in Utrecht with Lotte. We sold our old stuff at the free market and "
               "made 63 euros, then spent it all on poffertjes."),
    (85, 21.0, "Passed my Portuguese A2 exam! Duarte said I was the most improved in the group."),
    (89, 22.0, "Joost's grandma turned 90, party at a community centre in Zwolle with three "
               "generations dancing to schlager."),
    (92, 19.5, "Lost my keys for a full hour and found them in the fridge, next to the butter."),
    (99, 17.5, "Parking ticket in Delft, 95 euros for being eleven minutes over. Welcome to "
               "owning a car."),
    (100, 18.0, "Picked up my new glasses, same prescription but green frames and I love them."),
    (102, 4.75, "Flight to Porto at 7:10 from Rotterdam airport, I've been up since 4:30, pray "
                "for me."),
    (104, 20.0, "Went to Mira's wedding in Porto on Saturday, beautiful venue by the river, I "
                "cried during the vows."),
    (104, 20.5, "My toast at the wedding went down well. Mira's grandma hugged me and said "
                "something I didn't understand at all."),
    (106, 12.0, "Back at work and the whole team wanted wedding pictures."),
    (108, 22.0, "Sanne and her girlfriend came for dinner, I made mushroom risotto and nobody "
                "complained."),
    (114, 16.0, "Gave a talk at the all-hands about the patient intake dashboard, only stuttered "
                "twice."),
    (116, 21.0, "First barbecue of the year on the balcony. Burnt the halloumi, ate it anyway."),
    (117, 23.5, "Watched the Champions League final at Café Ari with Teun. He's a Dortmund fan "
                "so it was a sad night."),
    (29, 19.0, "Took Nougat for her yearly jabs, she screamed the whole way there."),
    (64, 22.0, "Joost's colleague Anouk came for dinner, lovely woman, talked school politics for "
               "two hours."),
    (36, 21.0, "Went to a pub quiz with Sanne's lot, we came last and won a bottle of cheap "
               "wine for it."),
    (94, 13.0, "Had my hair cut short, like really short. Joost walked right past me in the "
               "street."),
    (111, 17.0, "Got a card from Femke in Copenhagen, she's loving it there."),
)

# -- topics told over weeks: name -> ((day, hour, text), ...) -------------------------------
TOPICS = {
    "kitchen": (
        (56, 21.0, "Now that we're in, the kitchen really has to go. Budget is 14k, not a cent "
                   "more."),
        (63, 19.0, "Got three quotes for the kitchen. We're going with Dirk from Van Dam Bouw, he "
                   "was the only one who showed up on time."),
        (73, 20.0, "Picked the tiles for the kitchen! Green zellige, a bit uneven on purpose. "
                   "Joost was sceptical but came round."),
        (79, 21.5, "The kitchen countertop will be oak, the stone ones were way over what we "
                   "can spend."),
        (87, 19.0, "Dirk says the kitchen should be done by the 7th of June if the tiles arrive "
                   "on time."),
        (105, 20.0, "Kitchen demolition started today, we'll be eating on the sofa for three "
                    "weeks."),
    ),
    "dad": (
        (27, 20.0, "Dad's hip is getting worse, he can barely manage the stairs at home."),
        (44, 19.0, "Dad finally has a date for his hip replacement: 1 May, at the Martini "
                   "hospital."),
        (86, 21.0, "Dad's surgery went well! He was already joking with the nurses this evening."),
        (94, 20.0, "Dad is home now. Physio three times a week, and Mum is slowly losing her "
                   "mind."),
        (112, 19.0, "Dad walked to the bakery by himself today, with one crutch. Mum sent a "
                    "video."),
    ),
    "half": (
        (2, 20.0, "Signed up for the Maas half marathon on 17 March. Panicking a little."),
        (20, 12.0, "Longest run so far, 16 km along the river."),
        (34, 11.0, "Last long run before the half, 18 km in the rain. Tapering now."),
        (41, 15.0, "Finished the half marathon in 1:58! Under two hours, I cried at the finish."),
    ),
    "job": (
        (21, 21.0, "Applied for a data role at Kestrel Health, a hospital software company. Why "
                   "not."),
        (32, 18.0, "First interview with Kestrel went well, they asked a lot about dashboards."),
        (42, 19.0, "Second round at Kestrel: a case study on patient intake times, then a chat "
                   "with their CTO, Hamid. He's sharp."),
        (51, 17.5, "Kestrel made me an offer! 68k plus a training budget. Saying yes tomorrow."),
        (52, 16.0, "Handed in my notice today. Last day is the 12th of April."),
    ),
    "nougat": (
        (57, 20.0, "Nougat threw up three times today and she's drinking loads of water. "
                   "Worried."),
        (58, 18.0, "Took Nougat to Dierenkliniek Kralingen, they took blood and kept her for an "
                   "hour."),
        (61, 10.0, "The vet called: Nougat's kidney values are high, early stage kidney disease. "
                   "At her age it's not unusual, apparently."),
        (91, 18.0, "Nougat's blood work is stable, the vet is happy with her."),
    ),
    "flat": (
        (9, 21.0, "We put in a bid on a flat in Kralingen! Three rooms and a south-facing "
                  "balcony."),
        (14, 18.0, "Our bid was accepted!!! We're buying a flat!"),
        (29, 16.0, "Signed at the notary today. We get the keys on the 21st of March."),
        (45, 19.0, "Got the keys! Sat on the floor of the empty living room eating chips."),
        (46, 21.0, "Verhuisbedrijf Snel is coming at 8 tomorrow. 62 boxes packed, no idea where "
                   "the kettle is."),
    ),
    "party": (
        (60, 21.0, "Joost turns 40 on the 11th of May and I'm throwing him a surprise party. "
                   "Don't let me forget anything."),
        (68, 14.0, "Booked the back room at Café De Ligt for Joost's party."),
        (76, 20.0, "Guest list for Joost's 40th is at 35 people now. That's the cap, the room "
                   "won't hold more."),
        (83, 21.0, "Going with an 80s theme for the party. His brother is coming as Freddie "
                   "Mercury."),
        (90, 20.5, "Ordered a cake shaped like a cassette tape for the party."),
        (97, 12.0, "Joost's surprise party was perfect, he had NO idea. Still picking glitter "
                   "out of my hair."),
    ),
    "lotte": (
        (17, 21.0, "Lotte is 28 weeks now and the baby kicks like crazy, I felt it!"),
        (40, 18.0, "Baby shower for Lotte today. We played that game with melted chocolate in "
                   "nappies, disgusting."),
        (93, 21.0, "Lotte's due in three weeks and she is so done."),
        (110, 9.5, "I'm an aunt!!! Lotte had a little girl this morning. Fenna, 3.4 kg."),
        (115, 21.0, "Held my niece for the first time today, she smells like bread."),
    ),
    "tomatoes": (
        (65, 20.0, "Bought seeds for the balcony: San Marzano tomatoes and some basil."),
        (77, 8.0, "The tomato seedlings are up! Eight little sprouts on the windowsill."),
        (98, 19.0, "Moved the tomato plants out to the balcony, fingers crossed for no frost."),
        (118, 10.0, "First flowers on the tomatoes!"),
    ),
    "car": (
        (84, 21.0, "We're going to buy a car after all, Joost needs one to get to the workshop."),
        (87, 13.0, "Test drove a Yaris and a Honda Jazz. The Jazz smelled like wet dog."),
        (101, 20.0, "Insurance for the new car is 64 a month, not bad at all."),
    ),
    "pilot": (
        (37, 17.0, "The RouteWise pilot went live at Vos Logistics today, only one bug so far."),
        (50, 17.5, "Vos Logistics says RouteWise saved them 9% on fuel in the first month. Ops "
                   "is thrilled."),
        (66, 16.0, "The RouteWise handover doc is 14 pages, whoever gets this is lucky."),
    ),
    "toast": (
        (72, 21.0, "Mira asked me to give a short toast at her wedding. In Portuguese. I said "
                   "yes before thinking."),
        (81, 20.0, "Toast draft number three, Duarte fixed my grammar. It's 90 seconds now."),
        (101, 22.0, "Practised the toast on Nougat. She walked off halfway."),
    ),
}

# -- side remarks that look like facts but are not: (day, hour, text) -------------------------
SIDE_REMARKS = (
    (6, 11.0, "My head is killing me today."),
    (6, 17.0, "Head's fine now, the paracetamol kicked in."),
    (11, 15.0, "Honestly, coffee is my whole personality at this point."),
    (20, 14.0, "My legs are jelly after that run."),
    (24, 21.0, "I basically live at the office this week."),
    (27, 12.0, "I'm never drinking again."),
    (34, 17.0, "My legs feel fine, weirdly."),
    (43, 8.0, "My legs are shot, walking down the stairs backwards like a crab."),
    (46, 22.5, "I'm a professional box packer now, putting it on my CV."),
    (48, 20.0, "My back is wrecked from carrying boxes."),
    (52, 21.0, "I'm basically fluent in IKEA instructions now."),
    (59, 21.0, "Nougat is the real owner of this flat, I just pay for it."),
    (63, 9.0, "I think I'm allergic to Mondays."),
    (71, 19.0, "My brain is full, no more new names today please."),
    (97, 11.0, "My feet are destroyed from dancing all night."),
    (105, 9.0, "I live on takeaway now."),
    (112, 18.0, "I'm so over the rain, it's nearly June."),
)

# -- daily notes: slot -> texts (am 7-10h, work 10-18h on weekdays, pm 18-23h, weekend 9-22h) --
DAILY = {
    "am": (
        "Slept badly, Nougat was doing zoomies at 4am.",
        "Up early, the light is finally coming back in the mornings.",
        "Overslept, skipped breakfast.",
        "Rainy morning, stayed in bed ten extra minutes.",
        "Woke up with a headache, drinking loads of water.",
        "First coffee, finally human.",
        "Morning run, 5k easy.",
        "Grey and windy again.",
        "Made it out the door on time for once.",
        "Meditated for ten minutes, my mind still wandered to my inbox.",
        "Coffee, then straight into it.",
        "Foggy this morning, couldn't even see the Erasmus bridge.",
        "Nougat woke me up by sitting on my face.",
        "Quick shower, no time for breakfast.",
        "Beautiful sunrise this morning, pink everywhere.",
        "Porridge and the news, the usual.",
        "Really didn't want to get up today.",
        "Early start, everyone else still asleep.",
    ),
    "work": (
        "Worked from home today, mostly emails.",
        "Long day, meetings till 6.",
        "Three meetings back to back before lunch, didn't even get a toilet break.",
        "Spent the whole afternoon fixing one SQL query. One.",
        "Quiet day at work, actually got stuff done.",
        "Lunch at my desk again, sad salad.",
        "Wrote documentation all morning, my brain is mush.",
        "Presented the monthly numbers, nobody asked a single question.",
        "Paired with one of the juniors today, she's sharp.",
        "Our standup took 40 minutes. That's not a standup.",
        "Half the team is out sick, very quiet in the office.",
        "Reviewed a pull request with 2,000 lines in it, send help.",
        "Spent an hour in a meeting that could have been an email.",
        "Cake in the office kitchen, someone's birthday, didn't ask whose.",
        "Deadline moved up a week, fun times.",
        "Good brainstorm this afternoon, lots of sticky notes.",
        "Excel crashed and took my unsaved work with it.",
        "Two hours of training slides on the new privacy rules.",
        "Fixed a bug I introduced myself last week, shhh.",
        "Client call ran over by 45 minutes.",
        "Kept getting interrupted, nothing got done today.",
        "Spent the morning cleaning up old reports nobody reads.",
        "My calendar is a game of Tetris this week.",
        "Nice chat with someone from finance at the coffee machine.",
        "The office was freezing, worked in my coat.",
        "Back-to-back calls, my ears hurt from the headset.",
        "Took a proper lunch break for once and walked around the block.",
        "The Wi-Fi at the office died for an hour and everyone just chatted.",
        "Finished the quarterly report a day early, who am I.",
        "Demo went fine, one awkward silence.",
        "Someone reheated fish in the office microwave again.",
        "Got pulled into a fire drill about a broken data pipeline.",
        "Mostly Slack today. So much Slack.",
        "Wrote a little Python script that saves me an hour a week, very smug about it.",
        "Meeting-free afternoon, bliss.",
        "Late start, worked till 7 to make up for it.",
        "Workshops all day, I'm talked out.",
        "Interviewed a candidate for the team, a really good one.",
        "My neck hurts from hunching over the laptop.",
        "Team retro today, lots of feelings.",
        "Worked from home, Nougat sat on the keyboard twice.",
        "Productive morning, useless afternoon.",
        "Dashboard numbers looked wrong, turned out to be a time zone thing. It's always time "
        "zones.",
        "Had to explain a pivot table three times. Stayed polite.",
    ),
    "pm": (
        "Cooked pasta, watched two episodes of something forgettable.",
        "Early night, totally wiped.",
        "Joost made curry, it was amazing.",
        "Did laundry, folded none of it.",
        "Read for an hour with my phone in the other room, felt great.",
        "Ordered pizza, no regrets.",
        "Stretched for 20 minutes, my hamstrings are like cables.",
        "Tidied the flat for 20 minutes and called it a day.",
        "Face mask, tea, bed.",
        "Made soup with whatever was left in the fridge.",
        "Binge-watched a Danish crime series, now too scared to sleep.",
        "Played a board game with Joost, he won, as always.",
        "Answered personal emails, inbox zero for about four minutes.",
        "Long bath, podcast, bed.",
        "Called Lotte for an hour, we mostly talked about nothing.",
        "Joost and I went for a drink at the corner bar.",
        "Evening run, 6 km, legs felt heavy.",
        "Watched a documentary about octopuses, they're too smart.",
        "Paid some bills, very adult of me.",
        "Couldn't decide what to watch, scrolled for 40 minutes, went to bed.",
        "Leftovers for dinner, nobody wanted to cook.",
        "Sat outside for a bit, it was almost warm.",
    ),
    "weekend": (
        "Slept in till 10, glorious.",
        "Market at the Binnenrotte, bought way too many strawberries.",
        "Long walk along the Maas with Joost.",
        "Cleaned the bathroom, very proud of myself.",
        "Brunch with friends, ate too much.",
        "Spent the afternoon in a café with a book.",
        "Did absolutely nothing today and it was perfect.",
        "Went thrift shopping, came back with a lamp.",
        "Rain all day, movie marathon.",
        "Met up with Sanne for coffee.",
        "Took the water taxi to Katendrecht for pizza.",
        "Dinner with Joost's parents, his mum asked about grandchildren again.",
        "Cooked a big pot of chilli for the week.",
        "Flea market haul: two plates and a very weird painting.",
        "Hungover. Never again. Until next time.",
        "Long run, felt slow but did it.",
        "Caught up on sleep, napped twice.",
        "Sorted out the photos on my phone, 9,000 of them.",
    ),
}
# (first day, last day, slot, text): notes that only fit part of the 120 days
WINDOWED = (
    (0, 57, "am", "Gym in the morning, legs day."),
    (0, 57, "am", "Gym before work, upper body, felt strong."),
    (0, 57, "am", "Skipped the gym, couldn't get out of bed."),
    (0, 37, "am", "Cycled in, headwind the whole way."),
    (0, 37, "pm", "Cycled home in the rain, soaked to the bone."),
    (0, 37, "weekend", "Cycled out to Kinderdijk with Joost, windmills and wind."),
    (38, 119, "am", "The tram was packed this morning, face in someone's armpit."),
    (38, 119, "am", "Tram got stuck behind a delivery truck, fifteen minutes late."),
    (38, 119, "pm", "Read on the way home, nearly missed my stop."),
    (58, 119, "pm", "Bouldering after work, finally got up the purple route."),
    (58, 119, "pm", "The bouldering hall was rammed tonight."),
    (0, 66, "work", "Another reorg email, skimmed it."),
    (0, 66, "work", "Truck data was a mess again, the sensors keep dropping out."),
    (0, 66, "work", "Fuel report for the ops team, same as every month."),
    (70, 85, "work", "Still learning who's who at the new job."),
    (70, 119, "work", "The hospital people use so many acronyms, I keep a list."),
    (70, 78, "work", "Onboarding sessions all day, I now know how to book a meeting room."),
    (70, 119, "work", "Spent the day on the patient intake dashboard."),
    (0, 44, "pm", "The upstairs neighbours were moving furniture at midnight again."),
    (47, 60, "pm", "Still can't find the box with the good knives."),
    (47, 119, "pm", "Walked around the Kralingse Plas after dinner, so nice having it close."),
    (47, 119, "weekend", "Repotted all the plants, the balcony looks like a jungle."),
    (47, 119, "weekend", "Sat on the balcony with a coffee for an hour."),
    (47, 70, "weekend", "IKEA trip. We needed one thing."),
    (48, 62, "weekend", "Painted the bedroom, two coats, my arms are dead."),
    (105, 119, "pm", "Takeaway again, the kitchen is a building site."),
    (0, 87, "pm", "Joost is marking homework at the kitchen table again."),
    (88, 119, "pm", "Joost came home covered in sawdust again."),
    (27, 85, "pm", "Long call with Mum, she's worried about Dad again."),
    (0, 101, "pm", "Video call with Mira about wedding stuff."),
    (20, 80, "pm", "Went for a walk after dinner, it's getting lighter in the evenings."),
    (0, 40, "weekend", "Long run, 14 km, slow and steady."),
    (41, 119, "weekend", "Easy run around the lake, no watch."),
)
# (weekday 0=Monday, slot, text)
WEEKDAY_NOTES = (
    (0, "am", "Monday. Inbox at 140 unread."),
    (0, "work", "Monday planning meeting ate the whole morning."),
    (1, "pm", "Portuguese class, we did the past tense and my head hurts."),
    (1, "pm", "Portuguese class tonight, learned thirty words about food."),
    (3, "pm", "Volleyball tonight, we won in straight sets!"),
    (3, "pm", "Volleyball was rough, I jammed a finger."),
    (3, "pm", "Volleyball, then beers, then regret."),
    (4, "pm", "Friday drinks with the team, left after one."),
    (4, "work", "Finally Friday, nobody is doing any real work."),
    (6, "weekend", "Lazy Sunday, didn't leave the flat."),
    (6, "weekend", "Sunday reset: laundry, meal prep, watered the plants."),
)
# (slot, template, slot values)
TEMPLATES = (
    ("pm", "Made {a} for dinner{b}", (
        ("risotto", "shakshuka", "fish tacos", "a big salad", "mushroom pasta",
         "salmon with potatoes", "dal", "veggie lasagne", "fried rice", "pea soup"),
        ("", ", pretty good if I say so myself", ", Joost had seconds", ", too much garlic"))),
    ("pm", "{a}k steps today{b}", (
        ("4", "6", "7", "9", "11", "12", "15"), ("", ", not bad", ", pathetic"))),
    ("am", "Slept {a} hours{b}", (
        ("5", "6", "7", "8", "9"), ("", ", feeling it", ", amazing", ", not enough"))),
    ("work", "Meetings till {a}, brain is fried.", (("5", "half 6", "6", "7"),)),
    ("pm", "In bed by {a}, {b}.", (
        ("10", "half 10", "11"), ("so tired", "early start tomorrow", "reading first"))),
)

CHAT = (
    "lol that's hilarious", "ok thanks!", "Second coffee, don't judge", "thanks, that helps",
    "haha true", "good morning!", "night night", "hmm let me think about it",
    "that's a good idea actually", "no worries", "sure, go ahead", "ok cool", "wait what",
    "omg yes", "perfect, thank you", "fair enough", "not today, maybe tomorrow", "sounds good",
    "lol no", "I'll think about it", "brb", "back", "ha, classic", "you're right, as usual",
    "that's so random", "love that", "ugh", "meh", "sorry, got distracted", "good point", "yep",
    "nah, it's fine", "ok that made me laugh", "third coffee. I know.", "I need a nap",
    "so tired today", "can't wait for the weekend", "raining again, typical",
    "it's sunny!! finally", "what a day", "hahaha", "thanks for listening",
    "remind me to call Mum", "noted", "exactly", "that's what I thought", "oops", "oh nice",
    "wow", "hmm not sure", "ok I'm off", "anyway", "long story", "tell me something nice",
    "lol same", "whatever works", "fine, fine", "let's do it", "not bad at all",
    "I'm hungry already", "can you make that shorter?", "ok but why though",
)
WEEKDAY_CHAT = ((0, "ugh mondays"), (0, "Monday again, how"), (4, "TGIF!!"),
                (4, "Friday feeling"), (6, "Sunday scaries kicking in"))

# -- details asked about: (kind, question, answer phrase) ------------------------------------
DETAILS = (
    ("event", "Where was Mira's wedding?", "Porto"),
    ("event", "Where was Mira's hen party?", "Antwerp"),
    ("event", "What film did Joost and I see at the Pathé?", "Dune"),
    ("event", "Who did I run into at Rotterdam Centraal?", "Yusuf"),
    ("event", "Where did we go for our anniversary dinner?", "Fitz"),
    ("event", "How much money did we make at the King's Day market?", "63"),
    ("event", "Which Portuguese exam did I pass?", "A2"),
    ("event", "Where did my volleyball team finish in the Delft tournament?", "came third"),
    ("topic", "What tiles did we pick for the kitchen?", "zellige"),
    ("topic", "Who is doing our kitchen renovation?", "Dirk"),
    ("topic", "What's our budget for the kitchen?", "14k"),
    ("topic", "Which hospital is Dad's hip operation at?", "Martini"),
    ("topic", "What was my half marathon time?", "1:58"),
    ("topic", "Who was the CTO I talked to at Kestrel?", "Hamid"),
    ("topic", "What did the vet find wrong with Nougat?", "kidney"),
    ("topic", "What's my niece's name?", "Fenna"),
    ("topic", "What kind of tomatoes am I growing on the balcony?", "San Marzano"),
    ("topic", "Which client piloted RouteWise?", "Vos Logistics"),
    ("detail", "How many people are on the guest list for Joost's party?", "35"),
    ("detail", "What's the theme of Joost's 40th?", "80s"),
)
NEVER = (
    "What's my passport number?",
    "What's my blood type?",
    "What's my shoe size?",
    "What's the wifi password at home?",
    "What's my mother's maiden name?",
    "What's the number plate of our car?",
    "How tall am I?",
    "Which primary school did I go to?",
)


# -- the life, scheduled ---------------------------------------------------------------------
@dataclass(frozen=True)
class Save:
    at: float
    day: int
    kind: str  # stable, change, event, topic, side, note, chat
    text: str


@dataclass(frozen=True)
class Question:
    kind: str  # changed, stable, event, topic, detail, never
    question: str
    answer: str = ""
    stale: tuple[str, ...] = ()


def _at(day: int, hour: float) -> float:
    return START + day * DAY + hour * 3600.0


def _spread(rng: random.Random, n: int, lo: int, hi: int) -> list[int]:
    """``n`` days in [lo, hi], distinct when there is room, sorted."""
    if hi < lo:
        return []
    span = list(range(lo, hi + 1))
    return sorted(rng.sample(span, n) if n <= len(span) else rng.choices(span, k=n))


def life(days: int = DAYS, seed: int = SEED) -> tuple[list[Save], list[Question]]:
    """The saves of the first ``days`` days in time order, and the questions they answer.

    Stable sayings and change restatements are spread by ``seed``; a changed fact whose change
    falls after ``days`` is asked as a plain fact with its first value."""
    rng = random.Random(seed)
    last = DAYS - 1
    planned: list[tuple[int, float, str, str]] = []
    questions: list[Question] = []
    for fact in STABLE:
        first = rng.randrange(0, 15)
        days_ = [first, *_spread(rng, len(fact.sayings) - 1, first + 8, last)]
        planned += [(d, rng.uniform(8, 22.5), "stable", s) for d, s in zip(days_, fact.sayings,
                                                                   strict=True)]
        if first < days:
            questions.append(Question("stable", fact.question, fact.answer))
    for change in CHANGES:
        seen: list[str] = []
        for k, state in enumerate(change.states):
            end = change.states[k + 1].day - 2 if k + 1 < len(change.states) else last
            rest = _spread(rng, len(state.sayings) - 1, state.day + 2, end)
            hours = [rng.uniform(8, 22.5) for _ in state.sayings]
            planned += [(d, h, "change", s)
                        for d, h, s in zip([state.day, *rest], hours, state.sayings,
                                               strict=True)]
            if state.day < days:
                seen.append(state.phrase)
        if seen:
            questions.append(Question("changed" if len(seen) > 1 else "stable",
                                      change.question, seen[-1], tuple(seen[:-1])))
    planned += [(d, h, "event", t) for d, h, t in EVENTS]
    planned += [(d, h, "topic", t) for tellings in TOPICS.values() for d, h, t in tellings]
    planned += [(d, h, "side", t) for d, h, t in SIDE_REMARKS]
    planned += _notes(rng)
    by_text = {t: d for d, _h, _k, t in planned}
    for kind, question, answer in DETAILS:  # asked once what answers them has been said
        said = [d for t, d in by_text.items() if answer.lower() in t.lower()]
        if said and min(said) < days:
            questions.append(Question(kind, question, answer))
    questions += [Question("never", q) for q in NEVER]
    planned.sort(key=lambda p: (p[0], p[1]))
    saves: list[Save] = []
    prev = 0.0
    for day, hour, kind, text in planned:
        if day >= days:
            continue
        at = max(_at(day, hour), prev + 30.0)
        saves.append(Save(at, day, kind, text))
        prev = at
    return saves, questions


_HOURS = {"am": (7.0, 9.8), "work": (10.0, 17.8), "pm": (18.0, 23.3), "weekend": (9.5, 22.0)}


def _notes(rng: random.Random) -> list[tuple[int, float, str, str]]:
    """Daily notes (2-6 on most days) and chit-chat (0-4 a day), a note not repeated within
    a fortnight."""
    out: list[tuple[int, float, str, str]] = []
    used: dict[str, int] = {}
    for day in range(DAYS):
        weekday = day % 7
        weekend = weekday >= 5
        slots = ("am", "weekend", "pm") if weekend else ("am", "work", "pm")
        pool = [(s, t) for s in slots for t in DAILY[s]]
        pool += [(s, t) for lo, hi, s, t in WINDOWED if lo <= day <= hi and s in slots]
        pool += [(s, t) for w, s, t in WEEKDAY_NOTES if w == weekday and s in slots]
        fresh = [(s, t) for s, t in pool if day - used.get(t, -99) >= 14]
        n = rng.choices((1, 2, 3, 4, 5, 6), (1, 3, 5, 5, 4, 3) if not weekend
                        else (1, 3, 4, 4, 2, 1))[0]
        picks = rng.sample(fresh, min(n, len(fresh)))
        if rng.random() < 0.35:  # a templated note now and then
            slot, template, values = rng.choice(TEMPLATES)
            slot = "weekend" if weekend and slot == "work" else slot
            fill = {"ab"[i]: rng.choice(v) for i, v in enumerate(values)}
            picks.append((slot, template.format(**fill)))
        for slot, text in picks:
            used[text] = day
            out.append((day, rng.uniform(*_HOURS[slot]), "note", text))
        chats = [t for w, t in WEEKDAY_CHAT if w == weekday and rng.random() < 0.5]
        chats += rng.sample(CHAT, rng.choices((0, 1, 2, 3, 4), (2, 4, 4, 2, 1))[0])
        out += [(day, rng.uniform(8.0, 23.5), "chat", t) for t in chats]
    return out


def problems() -> list[str]:
    """Checks on the material: every saying holds its phrase, an earlier value's phrase is in
    no memory but that value's sayings, and every detail's answer is said somewhere."""
    saves, _ = life()
    texts = [s.text for s in saves]
    out = []
    for fact in STABLE:
        out += [f"stable {fact.answer!r} not in {s!r}" for s in fact.sayings
                if fact.answer.lower() not in s.lower()]
    for change in CHANGES:
        for state in change.states:
            own = set(state.sayings)
            out += [f"change {state.phrase!r} not in {s!r}" for s in state.sayings
                    if state.phrase.lower() not in s.lower()]
            if state is not change.states[-1]:
                out += [f"stale {state.phrase!r} also in {t!r}" for t in texts
                        if state.phrase.lower() in t.lower() and t not in own]
    for _kind, question, answer in DETAILS:
        if not any(answer.lower() in t.lower() for t in texts):
            out.append(f"no memory says {answer!r} ({question})")
    return out


# -- the two arms ----------------------------------------------------------------------------
@dataclass
class Asked:
    found: dict[int, bool] = field(default_factory=dict)  # budget -> answer phrase in pack
    stale: dict[int, bool] = field(default_factory=dict)  # budget -> an earlier value in it
    tokens: dict[int, int] = field(default_factory=dict)
    first: str = ""


@dataclass
class Arm:
    name: str
    asked: list[Asked]
    live: int
    live_tokens: int
    rem_runs: int = 0
    flagged: int = 0
    clusters: int = 0
    synthesised: int = 0
    seconds: float = 0.0
    rem_seconds: float = 0.0


@dataclass
class Result:
    days: int
    saves: int
    questions: list[Question]
    arms: dict[str, Arm]

    def rate(self, arm: str, what: str, budget: int, kinds: tuple[str, ...] | None = None
             ) -> tuple[int, int]:
        """(hits, asked) of ``found`` or ``stale`` at ``budget`` over the questions it applies
        to: found over the answerable ones, stale over the changed facts."""
        hits = n = 0
        for q, a in zip(self.questions, self.arms[arm].asked, strict=True):
            if q.kind == "never" or (what == "stale" and not q.stale):
                continue
            if kinds is not None and q.kind not in kinds:
                continue
            n += 1
            hits += getattr(a, what)[budget]
        return hits, n

    def tokens(self, arm: str, never: bool, budget: int) -> list[int]:
        return [a.tokens[budget]
                for q, a in zip(self.questions, self.arms[arm].asked, strict=True)
                if (q.kind == "never") == never]


def _live_tokens(mem: Memory) -> int:
    return int(mem.store.scalar("SELECT coalesce(sum(tokens), 0) FROM nodes WHERE namespace = ? "
                                "AND status = 'live'", (mem.namespace,)))


def _arm(name: str, saves: list[Save], questions: list[Question], days: int, rem: bool,
         workdir: Path) -> Arm:
    now = [START]
    t0 = time.perf_counter()
    arm = Arm(name, [], 0, 0)
    with Memory(workdir / f"life-{name}.db", clock=lambda: now[0]) as mem:
        i = 0
        for day in range(days):
            while i < len(saves) and saves[i].day == day:
                now[0] = saves[i].at
                mem.save(saves[i].text)
                i += 1
            if rem:
                now[0] = max(now[0], _at(day + 1, REM_HOUR))
                t1 = time.perf_counter()
                run = mem.run_rem(now=now[0])
                arm.rem_seconds += time.perf_counter() - t1
                arm.rem_runs += 1
                arm.flagged += run.flagged
                arm.clusters += run.clusters
                arm.synthesised += run.synthesised
        now[0] = saves[-1].at + DAY
        for q in questions:
            asked = Asked()
            for budget in BUDGETS:
                pack = mem.inject(q.question, budget)
                low = pack.text.lower()
                asked.found[budget] = bool(q.answer) and q.answer.lower() in low
                asked.stale[budget] = any(s.lower() in low for s in q.stale)
                asked.tokens[budget] = pack.tokens_used
                if budget == BUDGETS[0]:
                    asked.first = pack.items[0].content if pack.items else ""
            arm.asked.append(asked)
        arm.live = mem.stats().live
        arm.live_tokens = _live_tokens(mem)
    arm.seconds = time.perf_counter() - t0
    return arm


def run(days: int | None = None, *, quick: bool = False, workdir: Path | None = None) -> Result:
    """Both arms over the first ``days`` days (all 120, or 60 with ``quick``)."""
    days = days or (QUICK_DAYS if quick else DAYS)
    workdir = workdir or Path(tempfile.mkdtemp(prefix="remd-life-"))
    saves, questions = life(days)
    arms = {name: _arm(name, saves, questions, days, rem, workdir)
            for name, rem in (("no-rem", False), ("rem", True))}
    return Result(days, len(saves), questions, arms)


def _yn(a: bool, b: bool) -> str:
    return f"{'Y' if a else '-'} / {'Y' if b else '-'}"


def section(*, quick: bool = False, days: int | None = None) -> None:
    res = run(days, quick=quick)
    no, yes = res.arms["no-rem"], res.arms["rem"]
    lo, hi = BUDGETS
    print(f"## A simulated life ({res.days} days)\n")
    print(f"One person's {res.days} days with an agent (benchmarks/eval/life.py): {res.saves} "
          f"saves at the hours she says them (facts restated, changed, events, topics told over "
          f"weeks, daily notes, chit-chat). Two arms on the same saves: REM every night at 03:00 "
          f"(offline synthesiser) and no REM. Asked a day after the last save: "
          f"{sum(q.kind != 'never' for q in res.questions)} answerable questions and "
          f"{sum(q.kind == 'never' for q in res.questions)} about things never mentioned. "
          f"found = the answer phrase is in the pack's text (default floor); stale = an earlier "
          f"value of a changed fact is in it.\n")

    def rate(arm: str, what: str, b: int, kinds: tuple[str, ...] | None = None) -> str:
        h, n = res.rate(arm, what, b, kinds)
        return f"{h}/{n}"

    rows: list[list[object]] = [
        [f"found @{b}", rate("no-rem", "found", b), rate("rem", "found", b)] for b in BUDGETS]
    for kinds in (("changed",), ("stable",), ("event",), ("topic", "detail")):
        rows.append([f"found @{lo}: {'+'.join(kinds)}", rate("no-rem", "found", lo, kinds),
                     rate("rem", "found", lo, kinds)])
    rows += [[f"stale @{b} (changed facts)", rate("no-rem", "stale", b), rate("rem", "stale", b)]
             for b in BUDGETS]
    for b in BUDGETS:
        n0, n1 = res.tokens("no-rem", True, b), res.tokens("rem", True, b)
        rows.append([f"never-mentioned tokens @{b} (mean / max)",
                     f"{mean(n0):.1f} / {max(n0)}", f"{mean(n1):.1f} / {max(n1)}"])
    for b in BUDGETS:
        rows.append([f"answerable pack tokens @{b} (mean)",
                     f"{mean(res.tokens('no-rem', False, b)):.1f}",
                     f"{mean(res.tokens('rem', False, b)):.1f}"])
    rows += [
        ["live memories at the end", no.live, f"{yes.live} ({yes.live / max(no.live, 1):.2f}x)"],
        ["live tokens at the end", no.live_tokens,
         f"{yes.live_tokens} ({yes.live_tokens / max(no.live_tokens, 1):.2f}x)"],
        ["REM runs / flagged / clusters / synthesised", "",
         f"{yes.rem_runs} / {yes.flagged} / {yes.clusters} / {yes.synthesised}"],
        ["seconds (REM part)", f"{no.seconds:.1f}", f"{yes.seconds:.1f} ({yes.rem_seconds:.1f})"],
    ]
    print(table(["measure", "no REM", "REM nightly"], rows) + "\n")
    qrows: list[list[object]] = []
    for q, a0, a1 in zip(res.questions, no.asked, yes.asked, strict=True):
        stale = [_yn(a0.stale[b], a1.stale[b]) if q.stale else "" for b in BUDGETS]
        if q.kind == "never":
            qrows.append([q.kind, q.question, "", "", "", "", "",
                          f"{a0.tokens[lo]} / {a1.tokens[lo]}"])
            continue
        qrows.append([q.kind, q.question, q.answer + (f" (was {', '.join(q.stale)})"
                                                      if q.stale else ""),
                      _yn(a0.found[lo], a1.found[lo]), _yn(a0.found[hi], a1.found[hi]),
                      *stale, f"{a0.tokens[lo]} / {a1.tokens[lo]}"])
    print(table(["kind", "question", "answer", f"found @{lo}", f"found @{hi}", f"stale @{lo}",
                 f"stale @{hi}", f"tokens @{lo}"], qrows,
                align=["l", "l", "l", "r", "r", "r", "r", "r"]) + "\n")
    print("(each cell: no REM / REM nightly; Y = yes, - = no)\n")


if __name__ == "__main__":
    import sys

    section(quick="--quick" in sys.argv[1:])
