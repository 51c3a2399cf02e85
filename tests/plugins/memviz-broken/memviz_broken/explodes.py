raise RuntimeError("this plugin fails on purpose when it is imported")
