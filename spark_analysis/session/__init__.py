"""The Spark session the verifiers run in, and what makes it start and answer fast.

`spark_session` (the session's configuration for any master, the driver JVM's lifetime and its leftover record),
`jvm_archive` (the driver JVM's class-data-sharing archive: where it lives, when it may be used; built by
`spark_analysis.jvm_archive_build`), `local_frame` (a small DataFrame of driver-held rows as a local relation in
the JVM). The bottom layer of spark_analysis: it imports nothing else of it.
"""
