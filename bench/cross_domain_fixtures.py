"""The cross-domain probe's fixture (bench/cross_domain.py): one tenant with memories, a knowledge library, sessions,
transcripts and a code index, and questions meant for each domain (and some nothing answers). Written for the
probe only: none of it is in the relevance calibration's fixture (bench/relevance_fixtures.py), so the probe
measures the fitted scale on data it was not fitted on."""

from __future__ import annotations

from bench.labelled import Fixture, Question

MEMORIES = (
    "Priya Nair flies to Oslo on 3 February for the Nordic sales kickoff.",
    "Priya Nair's dog Biscuit is a three-year-old beagle.",
    "Priya Nair is training for her first triathlon in Bergen in August.",
    "Jonas Berg is lactose intolerant and brings his own lunch on Fridays.",
    "Jonas Berg's son Emil was born on 19 July 2024.",
    "Jonas Berg drives an electric Kia Niro to the office.",
    "Fatima Zahra speaks Arabic, French and a little Swedish.",
    "Fatima Zahra is moving to a flat in Gothenburg at the end of April.",
    "Fatima Zahra collects vintage film cameras, her favourite is a Leica M3.",
    "Chen Wei plays the guqin and performs at the spring festival concert.",
    "Chen Wei is taking unpaid leave in September to walk the Camino de Santiago.",
    "Chen Wei's mother lives in Chengdu and visits every Christmas.",
    "Rafael Costa prefers tea over coffee, always green tea without sugar.",
    "Rafael Costa's bicycle was stolen outside the station in March.",
    "Rafael Costa is the treasurer of the office chess club.",
    "Ingrid Holm had knee surgery in January and works from home until spring.",
    "Ingrid Holm's favourite author is Ursula K. Le Guin.",
    "Ingrid Holm keeps bees on her allotment outside Uppsala.",
)

_INCIDENTS = """# Incidents

## Declaring an incident
Anyone can declare an incident in the #incident channel with `/incident new`; the first responder becomes the
incident commander until someone takes over explicitly.

## Severity levels
SEV1 means customers cannot pay or log in; SEV2 a major feature is down; SEV3 a degraded but working feature.
SEV1 pages the whole on-call chain at once.

## Postmortems
Every SEV1 and SEV2 gets a blameless postmortem within five working days, with action items that have owners.
"""

_RELEASES = """# Releases

## Release train
Mobile apps ship every second Wednesday; the branch is cut on Monday at noon and only fixes for blockers go in.

## Feature flags
New features ship dark behind a flag in Unleash and are turned on per market once the product owner signs off.

## Hotfixes
A hotfix branches from the release tag, needs two reviewers, and is tagged with a patch version bump.
"""

_OFFICE = """# Office

# Facilities

## Parking
The garage under the building has 40 spaces; book one in the desk app the day before. Charging points are on
level -2.

## Visitors
Register visitors at reception by 09:00 the same day; they get a badge that opens the ground floor only.

## Lost and found
Lost items are kept at reception for one month, then donated.
"""

_DATA = """# Data platform

## Warehouse access
Request read access to the warehouse through the access portal; analysts get the `reader` role, approved by the
data lead within a day.

## Retention
Raw event data is kept 13 months in the warehouse; aggregated tables are kept indefinitely.

## Dashboards
Dashboards live in Metabase; a dashboard nobody opened for 90 days is archived automatically.
"""

DOCUMENTS = {"runbooks/incidents.md": _INCIDENTS, "runbooks/releases.md": _RELEASES, "handbook/office.md": _OFFICE,
             "handbook/data.md": _DATA}

SESSIONS = {
    "slow-search": [
        ("user", "The product search endpoint takes 4 seconds for queries with a category filter."),
        ("assistant", "Run EXPLAIN ANALYZE: a sequential scan on products would mean the category_id index is "
                      "missing or unused."),
        ("user", "It is a seq scan. There is no index on products.category_id."),
        ("assistant", "Create it CONCURRENTLY so writes are not blocked: CREATE INDEX CONCURRENTLY "
                      "products_category_idx ON products (category_id)."),
        ("user", "With the index the search endpoint answers in 40 ms."),
    ],
    "auth-tokens": [
        ("user", "Users get logged out after exactly one hour even when they are active."),
        ("assistant", "The refresh token flow is probably not wired: the access token lifetime is 3600 seconds."),
        ("user", "Right, the mobile client never called the /token/refresh endpoint."),
        ("assistant", "Refresh when the access token has less than five minutes left, and retry the request once."),
    ],
    "ci-cache": [
        ("user", "CI builds take 25 minutes because the Docker layers are rebuilt every time."),
        ("assistant", "Use the registry as a build cache with --cache-from and order the Dockerfile so the "
                      "dependency install comes before copying the source."),
        ("user", "With the registry cache the build is down to 6 minutes."),
    ],
}

TRANSCRIPTS = {
    "planning-0603": [
        ("user", "Sprint planning, June 3. Goal: ship the loyalty points balance on the account page."),
        ("assistant", "Mei: the points API is ready, but the mobile screens need design review first."),
        ("user", "Arjun: I will pair with design on Tuesday to finish the balance screen."),
        ("assistant", "Risk: the currency rounding for points is not agreed with finance yet."),
    ],
    "vendor-call": [
        ("user", "Call with the SMS vendor. They will raise the price to 4 cents per message from August."),
        ("assistant", "We asked for a volume discount above one million messages a month."),
        ("user", "They offered 3.2 cents above one million, valid for two years."),
    ],
}

CODE_MODULES = ("difflib.py", "fnmatch.py", "statistics.py", "base64.py", "calendar.py", "ipaddress.py")

QUESTIONS = (
    Question("When does Priya fly to Oslo?", "memories", "oslo"),
    Question("What breed is Priya's dog?", "memories", "beagle"),
    Question("Where is Priya's triathlon?", "memories", "triathlon"),
    Question("What can't Jonas eat?", "memories", "lactose"),
    Question("When was Jonas's son born?", "memories", "emil was born"),
    Question("What car does Jonas drive?", "memories", "kia niro"),
    Question("Which languages does Fatima speak?", "memories", "arabic"),
    Question("When is Fatima moving to Gothenburg?", "memories", "gothenburg"),
    Question("What instrument does Chen Wei play?", "memories", "guqin"),
    Question("Why is Chen Wei taking leave in September?", "memories", "camino"),
    Question("What does Rafael drink?", "memories", "green tea"),
    Question("What happened to Rafael's bicycle?", "memories", "bicycle was stolen"),
    Question("Why does Ingrid work from home?", "memories", "knee surgery"),
    Question("What does Ingrid keep on her allotment?", "memories", "bees"),
    Question("how do I declare an incident?", "knowledge", "/incident new"),
    Question("what counts as a SEV1 incident?", "knowledge", "sev1 means"),
    Question("when is a postmortem required?", "knowledge", "blameless postmortem"),
    Question("how often do the mobile apps release?", "knowledge", "every second wednesday"),
    Question("how do I ship a hotfix?", "knowledge", "hotfix branches"),
    Question("how are new features turned on?", "knowledge", "behind a flag"),
    Question("how do I book a parking space?", "knowledge", "40 spaces"),
    Question("how do I register a visitor?", "knowledge", "register visitors"),
    Question("how long is raw event data retained?", "knowledge", "13 months"),
    Question("how do I get access to the data warehouse?", "knowledge", "access portal"),
    Question("why was the product search endpoint slow?", "sessions", "no index on products"),
    Question("which index did we add for the category filter?", "sessions", "products_category_idx"),
    Question("why are users logged out after one hour?", "sessions", "never called the /token/refresh"),
    Question("when should the client refresh the access token?", "sessions", "five minutes left"),
    Question("how did we speed up the docker builds in CI?", "sessions", "--cache-from"),
    Question("how long does the CI build take with the registry cache?", "sessions", "6 minutes"),
    Question("what is the sprint goal for June?", "transcripts", "loyalty points balance"),
    Question("what is the risk with the loyalty points?", "transcripts", "currency rounding"),
    Question("who pairs with design on the balance screen?", "transcripts", "pair with design"),
    Question("what will the SMS vendor charge from August?", "transcripts", "4 cents"),
    Question("what volume discount did the SMS vendor offer?", "transcripts", "3.2 cents"),
    Question("find close matches to a misspelled word", "code", "difflib.get_close_matches"),
    Question("produce a unified diff of two files", "code", "difflib.unified_diff"),
    Question("match a filename against a shell wildcard pattern", "code", "fnmatch.fnmatch|fnmatch.fnmatchcase"),
    Question("compute the median of a list of numbers", "code", "statistics.median"),
    Question("standard deviation of a sample", "code", "statistics.stdev"),
    Question("decode a base64 encoded string", "code", "base64.b64decode|base64.standard_b64decode"),
    Question("is a year a leap year", "code", "calendar.isleap"),
    Question("parse an IP network from a string", "code", "ipaddress.ip_network"),
    Question("What is the tallest mountain in Africa?", None),
    Question("Who painted the Mona Lisa?", None),
    Question("When does Magnus fly to Reykjavik?", None),
    Question("how do I configure the VPN on Linux?", None),
    Question("what is our policy on remote work abroad?", None),
)

FIXTURE = Fixture("cross-domain", MEMORIES, DOCUMENTS, SESSIONS, TRANSCRIPTS, CODE_MODULES, QUESTIONS)

__all__ = ["FIXTURE"]
