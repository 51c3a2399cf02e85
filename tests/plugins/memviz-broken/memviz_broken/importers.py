from memviz.importers import ImportFormat


def import_one_argument(source):
    raise AssertionError("never called: memviz refuses this importer when it loads")


BAD_RUN = ImportFormat("bad-run", import_one_argument, "nothing (a broken importer)")
