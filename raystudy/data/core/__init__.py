"""What a dataset is: a factor space plus a renderer (:mod:`.base`, :mod:`.factors`), the
registry that names datasets (:mod:`.registry`), the official grids that a drawn dataset and
its file share (:mod:`.grids`, :mod:`.families`), what describes them (:mod:`.catalog`), and
what every stage above shares (a file's errors, :mod:`.files`; render scratch,
:mod:`.workspace`)."""
