"""English words that name no topic, left out of the map's region names (labels.py).

Lower case, apostrophes as "'". Grouped by why a word says nothing about what a region of
memories is about: it is grammar, it is said of everything, it counts, or it dates (the
timeline shows when).
"""
from __future__ import annotations

_GRAMMAR = """
a an the this that these those some any each every either neither both all half such what whatever which whichever
i me my mine myself we us our ours ourselves you your yours yourself yourselves he him his himself she her hers
herself it its itself they them their theirs themselves one ones oneself who whom whose whoever
i'm i've i'll i'd you're you've you'll you'd he's he'll he'd she's she'll she'd it's it'll it'd we're we've we'll
we'd they're they've they'll they'd that's that'll there's here's what's who's where's when's why's how's let's
am is are was were be been being have has had having do does did doing done
can could may might must shall should will would ought
isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't can't cannot couldn't mustn't mightn't
shan't shouldn't won't wouldn't needn't ain't
about above across after afterwards against along alongside amid among amongst around as at before behind below
beneath beside besides between beyond by despite down during except for from in inside into like near of off on
onto out outside over past per since than through throughout till to toward towards under underneath unlike
until unto up upon via with within without
and but or nor so yet if unless because although though whereas while whether whilst then else otherwise
how when where why whenever wherever however
not no yes yeah yep nope ok okay oh ah hey hi hello hmm um uh please thanks thank sorry
here there now then again already also just only even still very really quite rather too much many more most
less least few fewer lot lots bit little enough almost nearly perhaps maybe probably possibly certainly surely
actually basically honestly literally simply exactly especially usually often sometimes always never ever once
twice instead anyway anyhow somehow together apart away back ahead soon later earlier ago meanwhile indeed
else elsewhere everywhere somewhere anywhere nowhere everyone everybody everything someone somebody something
anyone anybody anything nobody nothing none own same other others another various several certain
etc via vs per eg ie re
"""

# verbs, nouns and adjectives said about anything, in their common forms
_GENERIC = """
get gets got gotten getting go goes went gone going come comes came coming make makes made making
take takes took taken taking give gives gave given giving put puts putting let lets letting
say says said saying tell tells told telling ask asks asked asking talk talks talked talking speak speaks spoke
know knows knew known knowing think thinks thought thinking want wants wanted wanting need needs needed needing
like likes liked liking see sees saw seen seeing look looks looked looking seem seems seemed use uses used using
try tries tried trying keep keeps kept keeping feel feels felt feeling find finds found finding mean means meant
call calls called calling turn turns turned become becomes became leave leaves left leaving show shows showed shown
help helps helped helping start starts started starting stop stops stopped begin began begun end ends ended
work works worked working run runs ran running set sets move moves moved happen happens happened
hear heard add adds added sure able unable likely unlikely
thing things stuff way ways kind kinds sort sorts type types part parts lot case point fact matter
good better best bad worse worst great big bigger small smaller large little long short high low new old right
wrong real true false fine nice whole main full own different same next last first second third final
"""

# numbers and amounts in words
_COUNTING = """
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen
eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred hundreds thousand thousands million
millions billion dozen dozens fourth fifth sixth seventh eighth ninth tenth
"""

# dates and durations: the timeline shows when
_CALENDAR = """
today tomorrow yesterday tonight day days daily week weeks weekly month months monthly year years yearly hour hours
minute minutes second seconds time times moment date dates
monday tuesday wednesday thursday friday saturday sunday
january february march april may june july august september october november december
"""

STOPWORDS = frozenset(" ".join((_GRAMMAR, _GENERIC, _COUNTING, _CALENDAR)).split())
