"""The relevance calibration's own fixture (bench/relevance_calibration.py): one tenant of a made-up company with
every domain filled, and questions meant for each domain, written here for this purpose (no public benchmark, not
the LoCoMo dev split). The cross-domain probe has a different fixture (bench/cross_domain_fixtures.py)."""

from __future__ import annotations

from bench.labelled import Fixture, Question

MEMORIES = (
    "Marta Kowalski flies to Lisbon on 14 March for the design offsite.",
    "Marta Kowalski is allergic to shellfish and avoids seafood restaurants.",
    "Marta's daughter Zofia started violin lessons in September.",
    "Dev Raman moved from Pune to Rotterdam in 2023 to join the payments team.",
    "Dev Raman's favourite editor is Helix; he switched from Vim last spring.",
    "Dev Raman runs the Rotterdam half marathon every October.",
    "Keiko Tanaka adopted a grey cat named Mochi in January.",
    "Keiko Tanaka prefers meetings before 11am Tokyo time.",
    "Keiko Tanaka is learning Portuguese before her trip to Porto in June.",
    "Samuel Okafor's wedding anniversary is on 2 August.",
    "Samuel Okafor coaches his son's under-10 football team on Saturdays.",
    "Samuel Okafor bought a used Volvo estate in November.",
    "Lena Fischer takes parental leave from 1 May until the end of October.",
    "Lena Fischer plays bass in a jazz trio called Blue Lantern.",
    "Lena Fischer's team lunch budget is 40 euros per person.",
    "Tomás Ruiz broke his wrist skiing in Andorra in February.",
    "Tomás Ruiz is vegetarian and drinks only oat milk in coffee.",
    "Tomás Ruiz is saving to buy a sailboat by 2027.",
    "Aiko Mori won the company hackathon with a receipt-scanning app.",
    "Aiko Mori volunteers at the animal shelter every second Sunday.",
    "Priyanka Shah's passport expires on 30 November, she must renew it before travelling.",
    "Priyanka Shah grows chillies and tomatoes on her balcony.",
    "Owen Hughes is afraid of flying and takes the train to conferences.",
    "Owen Hughes' sister Carys is a nurse in Cardiff.",
)

_DEPLOYS = """# Deploys

## Canary
Every release goes to the canary pool first: 5% of traffic for 30 minutes. Watch the error-rate and p99 latency
dashboards; if either rises above the release's baseline, stop the rollout.

## Reverting a release
To revert, run `shipit revert <service>`: it redeploys the previous image tag to every pool and pages nobody.
Reverts are always allowed, even inside a freeze window.

## Freeze windows
No deploys on Fridays after 15:00 or during the last week of December. Emergency fixes need a director's approval.
"""

_DATABASES = """# Databases

## Backups
Postgres takes a base backup every night at 02:00 UTC with WAL archiving to object storage; backups are kept for
35 days.

## Restoring from a backup
Restore with `pgrestore --target-time` to a fresh instance, check row counts against the source, then switch the
connection string. A full restore of the main cluster takes about 90 minutes.

## Failover
The replica in the second zone is promoted automatically when the primary misses 3 health checks. After a
failover, rebuild a new replica before the next maintenance window.

## Vacuum and bloat
Autovacuum runs with a scale factor of 0.05 on the large tables; if table bloat passes 30%, run pg_repack at night.
"""

_ONCALL = """# On-call

## Rotation
Each engineer is on call for one week, Monday 10:00 to Monday 10:00, in the order of the team roster.

## Paging
Pages go to the primary first and escalate to the secondary after 10 minutes without acknowledgement.

## Handover
At the end of a shift, write the handover note: open incidents, noisy alerts, and anything deferred.

## Compensation
Each on-call week earns one extra day off, taken within the following two months.
"""

_EXPENSES = """# Expenses

## Travel
Book economy for flights under six hours; hotels up to 180 euros a night in most cities. Keep every receipt.

## Equipment
Each employee has a home-office budget of 600 euros every three years for a desk, chair or monitor.

## Approval
Expenses under 200 euros need no approval; above that the manager approves within five working days.
"""

_SECURITY = """# Security

# Access

## Laptop encryption
Every laptop must use full-disk encryption (FileVault or LUKS) and lock after five minutes idle.

## Reporting a phishing email
Forward a suspicious email as an attachment to phish@halcyon.example and delete it; never click its links.
"""

DOCUMENTS = {"runbooks/deploys.md": _DEPLOYS, "runbooks/databases.md": _DATABASES, "handbook/oncall.md": _ONCALL,
             "handbook/expenses.md": _EXPENSES, "handbook/security.md": _SECURITY}

SESSIONS = {
    "flaky-test": [
        ("user", "The test_checkout_totals test fails about one run in ten on CI but never locally."),
        ("assistant", "Does it depend on the order of dictionary iteration or on the current time?"),
        ("user", "It uses datetime.now() to build the invoice date, and the CI runners are in UTC."),
        ("assistant", "Then it fails around midnight UTC when the date rolls over. Freeze the clock with a fixture "
                      "so the invoice date is fixed."),
        ("user", "Freezing the clock with a fixture fixed it: 200 runs, no failure."),
    ],
    "queue-migration": [
        ("user", "We are moving the email jobs from Celery to Dramatiq. What about the retries?"),
        ("assistant", "Dramatiq retries with exponential backoff by default; set max_retries=5 on the send_email "
                      "actor to match the old Celery policy."),
        ("user", "And the scheduled digests that ran with celery beat?"),
        ("assistant", "Use APScheduler in the worker process to enqueue the weekly digest every Monday at 07:00."),
        ("user", "Decision: the migration ships behind the QUEUE_BACKEND flag on 9 June."),
    ],
    "memory-leak": [
        ("user", "The image resizer's memory grows by 50 MB an hour until the pod is OOM-killed."),
        ("assistant", "Pillow keeps decoded images alive if the thumbnails are cached in a module-level dict."),
        ("user", "Yes, there is an unbounded thumbnail cache in resize.py."),
        ("assistant", "Replace it with functools.lru_cache(maxsize=256) so old thumbnails are dropped."),
    ],
}

TRANSCRIPTS = {
    "standup-0412": [
        ("user", "Standup, April 12. Noor: I finished the invoice PDF export and it is in review."),
        ("assistant", "Ilya: I am blocked on the tax API sandbox, their credentials expired yesterday."),
        ("user", "Noor: I can ask their support for new sandbox credentials today."),
        ("assistant", "Ilya: next I will add the VAT breakdown to the invoice totals."),
    ],
    "retro-q1": [
        ("user", "Q1 retro. What went well: the new onboarding checklist cut setup time to one day."),
        ("assistant", "What went badly: two incidents were caused by config changes without review."),
        ("user", "Action item: every config change goes through a pull request with one approval."),
        ("assistant", "Action item: Noor owns a dashboard of deploy frequency by team."),
    ],
}

CODE_MODULES = ("textwrap.py", "shlex.py", "heapq.py", "bisect.py", "csv.py", "colorsys.py")

QUESTIONS = (
    Question("When does Marta fly to Lisbon?", "memories", "lisbon"),
    Question("What is Marta allergic to?", "memories", "shellfish"),
    Question("What instrument does Zofia learn?", "memories", "violin"),
    Question("Where did Dev move in 2023?", "memories", "rotterdam in 2023"),
    Question("Which editor does Dev use?", "memories", "helix"),
    Question("What is the name of Keiko's cat?", "memories", "mochi"),
    Question("Which language is Keiko learning?", "memories", "portuguese"),
    Question("When is Samuel's wedding anniversary?", "memories", "anniversary"),
    Question("What car did Samuel buy?", "memories", "volvo"),
    Question("How long is Lena's parental leave?", "memories", "parental leave"),
    Question("What is the name of Lena's band?", "memories", "blue lantern"),
    Question("How did Tomás break his wrist?", "memories", "wrist"),
    Question("What does Tomás drink in his coffee?", "memories", "oat milk"),
    Question("What did Aiko win the hackathon with?", "memories", "receipt-scanning"),
    Question("When does Priyanka's passport expire?", "memories", "passport"),
    Question("How does Owen travel to conferences?", "memories", "train to conferences"),
    Question("how do I revert a bad release?", "knowledge", "shipit revert"),
    Question("what percentage of traffic does the canary get?", "knowledge", "5% of traffic"),
    Question("can we deploy on a Friday afternoon?", "knowledge", "no deploys on fridays"),
    Question("how long are database backups kept?", "knowledge", "kept for\n35 days"),
    Question("how do I restore the database from a backup?", "knowledge", "pgrestore"),
    Question("what happens when the primary database fails?", "knowledge", "promoted automatically"),
    Question("what to do about table bloat", "knowledge", "pg_repack"),
    Question("how long is an on-call shift?", "knowledge", "one week, monday"),
    Question("what goes in the on-call handover note?", "knowledge", "handover note"),
    Question("what is the hotel limit when travelling?", "knowledge", "180 euros"),
    Question("how much can I spend on a desk or monitor?", "knowledge", "600 euros"),
    Question("how do I report a phishing email?", "knowledge", "phish@halcyon"),
    Question("do laptops need disk encryption?", "knowledge", "full-disk encryption"),
    Question("why did test_checkout_totals fail on CI?", "sessions", "midnight utc"),
    Question("how was the flaky checkout test fixed?", "sessions", "freezing the clock"),
    Question("how many retries for the send_email actor?", "sessions", "max_retries=5"),
    Question("when does the queue migration ship?", "sessions", "queue_backend"),
    Question("what replaced celery beat for the weekly digest?", "sessions", "apscheduler"),
    Question("why does the image resizer leak memory?", "sessions", "module-level dict"),
    Question("what fixed the thumbnail cache?", "sessions", "lru_cache"),
    Question("who is blocked on the tax API sandbox?", "transcripts", "blocked on the tax api"),
    Question("what did Noor finish before standup?", "transcripts", "invoice pdf export"),
    Question("what caused the incidents in Q1?", "transcripts", "config changes without review"),
    Question("what went well in the Q1 retro?", "transcripts", "onboarding checklist"),
    Question("who owns the deploy frequency dashboard?", "transcripts", "deploy frequency"),
    Question("wrap a paragraph of text to a fixed width", "code",
             "textwrap.wrap|textwrap.fill|textwrap.TextWrapper.wrap|textwrap.TextWrapper.fill"),
    Question("remove common leading whitespace from lines", "code", "textwrap.dedent"),
    Question("split a shell command line into arguments", "code", "shlex.split"),
    Question("quote a string for safe use in a shell", "code", "shlex.quote"),
    Question("push an item onto a heap", "code", "heapq.heappush"),
    Question("find the n largest elements", "code", "heapq.nlargest"),
    Question("insert into a sorted list keeping it sorted", "code", "bisect.insort_right|bisect.insort_left"),
    Question("read CSV rows as dictionaries", "code", "csv.DictReader"),
    Question("guess the dialect of a csv file", "code", "csv.Sniffer.sniff|csv.Sniffer"),
    Question("convert rgb colour to hsv", "code", "colorsys.rgb_to_hsv"),
    Question("What is the capital of Australia?", None),
    Question("How many moons does Jupiter have?", None),
    Question("Who won the 1998 football world cup?", None),
    Question("what is the refund policy for cancelled flights?", None),
    Question("how do I rotate the kubernetes TLS certificates?", None),
    Question("When is Hiroshi's birthday?", None),
)

FIXTURE = Fixture("relevance-calibration", MEMORIES, DOCUMENTS, SESSIONS, TRANSCRIPTS, CODE_MODULES, QUESTIONS)

__all__ = ["FIXTURE"]
