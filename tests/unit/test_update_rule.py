"""The update rule (domain/update.py), pure: on the labelled probe (tests/fixtures/update_probe.tsv, pairs written
for this project) and on the issue's own cases.

Floors: precision ≥ 0.95 (a false supersede hides a true fact: at most about one in twenty), recall ≥ 0.9 on
the probe the rule was written against; on the held-out pairs (written after it was frozen) precision ≥ 0.95 and
recall ≥ 0.8 (it measured 1.0 / 0.864: a one-word subject, "The retro is on Thursday", is left alone on purpose).
Word values (session 25): on the pairs written blind to the rule, at most one supersede in twenty hides a fact that
still holds (measured 0.028 and 0.033: a bag "leather" then "heavy", a printer out of "toner" then "paper"), and
more than half the updates are found (0.702 and 0.600; the missed ones stay beside the older, never discarded).
"""

from __future__ import annotations

from bench.update_probe import (
    CHANGES,
    CHANGES_HELD_OUT,
    ENGINEERING_HELD_OUT,
    EVERYDAY_HELD_OUT,
    GENERAL_HELD_OUT,
    HELD_OUT,
    LIFE_HELD_OUT,
    MIXED_HELD_OUT,
    PERSON,
    PERSON_HELD_OUT,
    ROLES_HELD_OUT,
    WHEN,
    WHEN_HELD_OUT,
    WORDS,
    WORDS_HELD_OUT_A,
    WORDS_HELD_OUT_B,
    WORK_HELD_OUT,
    WORKPLACE_HELD_OUT,
    load,
    score,
)
from domain.update import update_of


def _blind(path, recall: float, hiding: float = 0.05) -> None:
    """A blind set's figures, printed, against its floors: the share of supersedes hiding a fact, and recall."""
    s = score(load(path))
    print(f"{path.name}: {s.pairs} pairs, precision {s.precision:.3f}, recall {s.recall:.3f}, hiding {s.hiding:.3f}")
    assert s.pairs >= 100 and s.hiding <= hiding and s.recall >= recall, s.wrong


def test_the_probe_precision_and_recall_clear_their_floors():
    rows = load()
    assert len(rows) >= 100 and sum(label == "update" for label, _, _ in rows) >= 50
    s = score(rows)
    print(f"update probe: {s.pairs} pairs, precision {s.precision:.3f}, recall {s.recall:.3f}")
    assert s.precision >= 0.95, s.wrong
    assert s.recall >= 0.9, s.wrong


def test_the_held_out_pairs_keep_precision():
    s = score(load(HELD_OUT))
    print(f"update held out: {s.pairs} pairs, precision {s.precision:.3f}, recall {s.recall:.3f}")
    assert s.pairs >= 40
    assert s.precision >= 0.95, s.wrong
    assert s.recall >= 0.8, s.wrong


def test_the_porto_codes_are_updates_with_their_evidence():
    u = update_of("the Porto warehouse door code is 7-3-20-0", "the Porto warehouse door code is 7-3-7-0")
    assert u is not None
    assert u.old_values == ("7-3-7-0",) and u.new_values == ("7-3-20-0",) and u.kinds == ("number",)
    assert set(u.shared) == {"porto", "warehous", "door", "code"}
    assert u.as_dict()["old_values"] == ["7-3-7-0"]


def test_a_different_fact_a_repeat_or_an_addition_is_no_update():
    assert update_of("Bob's badge is 5521", "Bob's phone is 555-1234") is None
    assert update_of("Alice's phone is 555-1234", "Bob's phone is 555-1234") is None
    assert update_of("Bob's phone is 555-1234", "Bob's phone is 555-1234") is None
    assert update_of("Bob's phone is 555-1234 and his desk is 4B", "Bob's phone is 555-1234") is None
    assert update_of("ok", "Bob's phone is 555-1234") is None
    assert update_of("", "") is None


def test_a_word_value_after_a_copula_or_a_preference_is_an_update():
    u = update_of("Alice's favourite colour is green", "Alice's favourite colour is blue")
    assert u is not None and u.old_values == ("blue",) and u.new_values == ("green",) and u.kinds == ("stem",)
    seats = update_of("Priya prefers aisle seats on long flights", "Priya prefers window seats on long flights")
    assert seats is not None and seats.old_values == ("window",) and seats.new_values == ("aisle",)
    assert update_of("Omar commutes by bike instead", "Omar commutes by train") is not None  # it says it replaces
    assert update_of("The team tracks bugs in Linear instead", "The team tracks bugs in Jira") is not None


def test_a_word_after_a_relation_or_a_present_tense_addition_is_no_update():
    assert update_of("Priya is allergic to shellfish", "Priya is allergic to peanuts") is None  # both may hold
    assert update_of("Maria likes dogs", "Maria likes cats") is None
    assert update_of("Sam painted a blue barn", "Sam painted a red barn") is None  # a second event
    assert update_of("The back door is blue", "The front door is blue") is None  # another door
    assert update_of("The app now supports offline mode", "The app supports dark mode") is None  # "now" adds
    assert update_of("Ana now plays squash", "Ana now plays tennis") is None


def test_weekdays_in_the_plural_are_dates():
    u = update_of("The team deploys on Thursdays", "The team deploys on Tuesdays")
    assert u is not None and u.kinds == ("date",) and u.new_values == ("Thursdays",)


def test_word_values_written_blind_keep_supersedes_from_hiding_facts():
    words = score(load(WORDS))
    assert words.pairs >= 30 and words.precision >= 0.95 and words.recall >= 0.8, words.wrong
    for path in (WORDS_HELD_OUT_A, WORDS_HELD_OUT_B):
        s = score(load(path))
        print(f"{path.name}: {s.pairs} pairs, precision {s.precision:.3f}, recall {s.recall:.3f}, "
              f"hiding {s.hiding:.3f}")
        assert s.pairs >= 90 and s.hiding <= 0.05 and s.recall >= 0.55, s.wrong


def test_a_change_reported_with_a_verb_is_an_update():
    u = update_of("We raised the API timeout to 60 seconds", "The API timeout is 30 seconds")
    assert u is not None and u.old_values == ("30",) and u.new_values == ("60",) and set(u.shared) >= {"api", "timeout"}
    reduced = update_of("Log retention was reduced from 30 to 14 days", "Log retention is 30 days")
    assert reduced is not None and reduced.old_values == ("30",) and reduced.new_values == ("14",)
    assert update_of("The weekly sync was moved to Thursday at 10:00", "The weekly sync is on Tuesday at 10:00")


def test_a_change_of_another_attribute_subject_or_unit_is_no_update():
    old = "The API timeout is 30 seconds"
    assert update_of("We raised the API rate limit to 200 requests", old) is None  # another attribute
    assert update_of("The staging timeout was raised to 60 seconds", "The production timeout is 30 seconds") is None
    assert update_of("We raised the API timeout alarm to 60 minutes", old) is None  # "alarm": not what it states
    assert update_of("The API timeout is 30 seconds and we raised retries to 5", old) is None  # no value gone


def test_change_statements_written_blind_hide_nothing():
    assert score(load(CHANGES)).precision >= 0.95 and score(load(CHANGES)).recall >= 0.8
    s = score(load(CHANGES_HELD_OUT))
    print(f"changes held out: {s.pairs} pairs, precision {s.precision:.3f}, recall {s.recall:.3f}")
    # measured 1.000 / 0.489 blind; its misses led to session 26's widening (1.000 / 0.911 since: seen)
    assert s.pairs >= 90 and s.precision >= 0.95 and s.recall >= 0.85, s.wrong


def test_the_speaker_is_a_subject_and_a_move_changes_where_one_lives():
    assert update_of("I moved to Berlin last month", "I live in Lisbon") is not None
    assert update_of("I work at Globex", "I work at Acme") is not None
    assert update_of("Kofi relocated to Nairobi", "Kofi lives in Accra") is not None
    assert update_of("My sister moved to Berlin", "I live in Lisbon") is None  # another person
    assert update_of("Kofi's brother relocated to Nairobi", "Kofi lives in Accra") is None
    assert update_of("I flew to Berlin last week", "I live in Lisbon") is None  # a trip
    assert update_of("I called Dad on Sunday", "I called Mum on Sunday") is None  # two calls
    assert score(load(PERSON)).precision == 1.0 and score(load(PERSON)).recall >= 0.8
    s = score(load(PERSON_HELD_OUT))
    print(f"person held out: {s.pairs} pairs, precision {s.precision:.3f}, recall {s.recall:.3f}")
    assert s.pairs >= 80 and s.precision >= 0.95 and s.recall >= 0.25, s.wrong  # measured 1.000 / 0.350


def test_a_dated_change_is_an_update_and_its_date_no_value():
    u = update_of("Maria moved to Seville in June", "Maria lives in Madrid")
    assert u is not None and u.old_values == ("Madrid",) and u.new_values == ("Seville",)
    timeout = update_of("The API timeout was raised to 60 seconds on May 3", "The API timeout is 30 seconds")
    assert timeout is not None and timeout.new_values == ("60",)
    assert update_of("My brother moved to Seville in June", "I live in Madrid") is None
    assert update_of("I flew to Berlin in June", "I live in Lisbon") is None
    # a word put before the attribute names another one
    assert update_of("My skip-level manager changed to Aisha Khan in February", "My manager is Tom Becker") is None
    assert score(load(WHEN)).precision == 1.0 and score(load(WHEN)).recall >= 0.8
    s = score(load(WHEN_HELD_OUT))
    print(f"when held out: {s.pairs} pairs, precision {s.precision:.3f}, recall {s.recall:.3f}, hiding {s.hiding:.3f}")
    assert s.pairs >= 80 and s.hiding <= 0.05 and s.recall >= 0.45, s.wrong  # blind .958 / .548; 1.0 / .548 since


def test_a_change_reported_in_other_words_is_an_update():
    # the verb that tied the value to its subject gives way to the change verb
    trial = update_of("Marketing extended the free trial to 30 days", "The free trial lasts 14 days")
    assert trial is not None and trial.old_values == ("14",) and trial.new_values == ("30",)
    assert update_of("Facilities lowered the lobby thermostat to 19 degrees",
                     "The lobby thermostat is set to 21 degrees")
    # a few words the old text says between "to" and the value; "with" after "replaced"; "from … to" of a name
    assert update_of("Nina's flight was rescheduled to depart at 9:40", "Nina's flight departs at 7:15")
    assert update_of("Security replaced the server room door code with 9052", "The server room door code is 4471")
    manager = update_of("Sofia's manager changed from Tom Reyes to Ana Kim", "Sofia's manager is Tom Reyes")
    assert manager is not None and manager.old_values == ("Tom", "Reyes") and manager.new_values == ("Ana", "Kim")
    # an identifier without a digit is a value, and a word value reported after "to"
    email = update_of("Omar updated his email address to omar.h@acme.io", "Omar's email address is omar@acme.io")
    assert email is not None and email.kinds == ("id",) and email.new_values == ("omar.h@acme.io",)
    assert update_of("We renamed the default branch to main", "The default branch is master")
    assert update_of("The SOC 2 audit got postponed to July", "The SOC 2 audit is scheduled for April")


def test_a_change_reported_of_another_attribute_or_time_is_no_update():
    # another attribute of the same subject, said where the verb was
    assert update_of("The batch job's timeout was extended to 4 hours", "The batch job runs at 2 am") is None
    assert update_of("Nina's flight was rescheduled to land at 9:40", "Nina's flight departs at 7:15") is None
    # the attribute's own name is not a verb that may give way ("phone" before "is")
    assert update_of("Bob changed his badge to 5521", "Bob's phone is 555-1234") is None
    assert update_of("We changed the Porto office's receptionist to Maria", "The Porto office's manager is Ana") is None
    # a word after the value is not the verb; a word value of something the old text does not name
    assert update_of("We upgraded the server's disk to 512 GB", "The server has 16 GB of memory") is None
    assert update_of("We changed the office dog's food to kibble", "The office dog is friendly") is None


def test_saying_the_old_holds_no_longer_is_an_update():
    u = update_of("Leila doesn't eat meat anymore", "Leila eats meat")
    assert u is not None and u.kinds == ("negation",)
    assert update_of("Ivy is not vegetarian anymore", "Ivy is vegetarian") is not None
    assert update_of("Kevin isn't vegan anymore", "Kevin is vegan") is not None
    assert update_of("Tom doesn't play tennis anymore", "Tom plays golf") is None  # another thing
    assert update_of("Leila doesn't eat meat", "Leila eats meat") is None  # no "anymore": a contradiction, not news
    assert update_of("Leila eats meat again", "Leila doesn't eat meat anymore") is None


def test_the_blind_sets_of_session_26_hide_nothing():
    # blind, as frozen: life 1.000 / .240, work 1.000 / .200 (before the widening .120 and .100); .280 / .280 since
    _blind(LIFE_HELD_OUT, 0.2)
    _blind(WORK_HELD_OUT, 0.2)


def test_where_or_how_something_is_done_now_is_an_update():
    # "now" cues a replacement after a preposition of place or means: one place, one means at a time
    assert update_of("Omar commutes by bike now", "Omar commutes by train") is not None
    assert update_of("The team tracks bugs in Linear now", "The team tracks bugs in Jira") is not None
    assert update_of("Mia now volunteers at the library", "Mia volunteers at the shelter") is not None
    # not where it adds ("also"), not for an object (one of many), not without a cue
    assert update_of("Mia now also volunteers at the library", "Mia volunteers at the shelter") is None
    assert update_of("The app now supports offline mode", "The app supports dark mode") is None
    assert update_of("Metrics are stored in S3", "Logs are stored in S3") is None
    assert update_of("Mia volunteers at the library", "Mia volunteers at the shelter") is None


def test_the_blind_sets_after_the_now_cue_hide_nothing():
    # blind, as frozen: everyday .941 / .356 (one supersede hiding a fact: "… on Mondays too now"), workplace
    # 1.000 / .444; "too" says it adds since (seen): everyday 1.000 / .356
    _blind(EVERYDAY_HELD_OUT, 0.3)
    _blind(WORKPLACE_HELD_OUT, 0.3)


def test_a_new_holder_of_a_role_of_one_is_an_update():
    u = update_of("Marcus Lee is now the engineering manager for the payments team",
                  "Priya Shah is the engineering manager for the payments team")
    assert u is not None and u.old_values == ("priya", "shah") and u.new_values == ("lee", "marcus")
    assert update_of("Tom is my new boss", "My boss is Dana") is not None  # either way round
    assert update_of("Our point of contact at Umbrella Corp is now Kevin Walsh",
                     "Laura Chen is our point of contact at Umbrella Corp") is not None
    assert update_of("Dr. Okafor is my new dentist", "My dentist is Dr. Patel") is not None  # a title is no name


def test_a_holder_of_a_role_of_many_or_of_another_role_is_no_update():
    assert update_of("Jim is my new friend", "Tom is my friend") is None  # one may have many friends
    assert update_of("Bob is now a manager at Acme", "Alice is a manager at Acme") is None  # "a": one of many
    assert update_of("Sarah Kim is now also the product manager for the loyalty program",
                     "Sarah Kim is the product manager for checkout") is None
    assert update_of("Marcus Lee is now the engineering manager for the search team",
                     "Priya Shah is the engineering manager for the payments team") is None  # another team
    # no word of a change: a second claim, left beside the first
    assert update_of("Marcus Lee is the engineering manager for the payments team",
                     "Priya Shah is the engineering manager for the payments team") is None


def test_the_blind_sets_after_a_roles_new_holder_hide_at_most_one_fact_in_ten():
    # blind, as frozen: roles 1.000 / .111 (at the session's start .022), mixed .909 / .222 (.833 / .111): one
    # supersede in eleven hides a fact, older than the session ("Sam prefers tea in the morning" / "… coffee after
    # lunch")
    _blind(ROLES_HELD_OUT, 0.1)
    _blind(MIXED_HELD_OUT, 0.2)  # the preference closed since (a two-word old value is two adjacent words)


def test_the_old_value_named_as_left_is_an_update():
    u = update_of("Tom quit Acme and joined Horizon Freight", "Tom works at Acme Logistics")
    assert u is not None and u.old_values == ("Acme", "Logistics") and u.new_values == ("Horizon", "Freight")
    assert update_of("Yuki left Sony for Nintendo in 2021", "Yuki works at Sony") is not None  # the date says when
    assert update_of("We replaced Cisco AnyConnect with Tailscale for VPN access",
                     "VPN access is provided by Cisco AnyConnect") is not None
    assert update_of("Sofia Ng replaced Martin Cole as CEO of Brightpath", "The CEO of Brightpath is Martin Cole")


def test_a_value_left_by_another_subject_or_one_of_two_is_no_update():
    assert update_of("We moved the standup from Room 4 to Room 7", "The retro is in Room 4") is None
    assert update_of("The design team switched from Jira to Linear", "Our team uses Jira for tickets") is None
    assert update_of("Ana switched from Google Docs to Notion for her notes",
                     "The team uses Google Docs for specs") is None
    # the subject as the owner of another person or thing (blind set g, session 26)
    assert update_of("Priya's husband left Deloitte for KPMG", "Priya works at Deloitte") is None
    assert update_of("My sister moved from Denver to Seattle", "I live in Denver") is None
    # the newer must say what the older said but its value (one word aside), or a recall asking "what do we use for
    # tickets?" finds neither: the older superseded, the newer without "use" and "tickets"
    assert update_of("The team has switched from Jira to Linear", "Our team uses Jira for tickets") is None
    # the old text says two values; one changing leaves the other said only by it
    assert update_of("The team switched from Jira to Linear",
                     "The team tracks bugs in Jira and docs in Confluence") is None


def test_the_blind_sets_after_the_old_value_named_hide_nothing():
    # blind, as frozen: general .867 / .289 (two hidden: "Priya's husband left Deloitte …", "My sister moved from
    # Denver …"; the subject as an owner is no subject since, so the set is seen), engineering 1.000 / .244 (.267 with
    # the change rule's guard since); at the session's start 1.000 / .111 and 1.000 / .044. General .244 since the
    # newer must say what the older said (recall finds it by those words).
    _blind(GENERAL_HELD_OUT, 0.2)
    _blind(ENGINEERING_HELD_OUT, 0.2)


def test_a_word_value_is_stated_as_one():
    # after a copula and a preposition of place, the attribute's value; after "out of", a relation's object
    assert update_of("The office printer is in the basement", "The office printer is in the hallway") is not None
    assert update_of("The lobby printer is out of paper", "The lobby printer is out of toner") is None
    # an old value of two words is two words next to each other: "tea in the morning" is a value and when
    assert update_of("Sam prefers coffee after lunch", "Sam prefers tea in the morning") is None
    assert update_of("Priya prefers aisle seats on long flights", "Priya prefers window seats on long flights")
