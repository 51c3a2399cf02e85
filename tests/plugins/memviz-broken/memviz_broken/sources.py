from memviz.frameworks import Source


class NoRecords(Source):
    """Lacks records(): memviz could recognise its stores but never read them."""

    system, title = "no-records", "No records"

    @classmethod
    def recognise(cls, probe):
        return None

    def token(self):
        return 0


class FakeMem0(Source):
    """Claims the key of memviz's own mem0 support."""

    system, title = "mem0", "Fake mem0"

    @classmethod
    def recognise(cls, probe):
        return cls(probe.target) if probe.is_file else None

    def token(self):
        return 0

    def records(self, task=None):
        return []


class Grabby(Source):
    """Loads well, then raises whenever it is asked to recognise anything."""

    system, title = "grabby", "Grabby"

    @classmethod
    def recognise(cls, probe):
        raise RuntimeError("grabby cannot look at anything")

    def token(self):
        return 0

    def records(self, task=None):
        return []


class WrongAnswer(Source):
    """Loads well, then answers recognise() with text instead of a source or None."""

    system, title = "wrong-answer", "Wrong answer"

    @classmethod
    def recognise(cls, probe):
        return "yes, this one"

    def token(self):
        return 0

    def records(self, task=None):
        return []
