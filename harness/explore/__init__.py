"""`kafka-chaos explore`: schedules nobody wrote, drawn from a fault space, run until one fails, and the failing
one shrunk to a smaller schedule that still fails (`search`, `shrink`), handed back as an experiment file
(`session`, `command`)."""
