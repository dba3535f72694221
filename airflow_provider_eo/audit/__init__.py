"""The audit: does HBase hold exactly what the committed epochs of a window wrote?

Pure checks (no I/O): :mod:`.findings`, :mod:`.expected_writes`, :mod:`.offset_check`,
:mod:`.cell_check`, :mod:`.dead_letter_check`, :mod:`.group_check`, :mod:`.report`;
the reads: :mod:`.hbase_reads`, :mod:`.audit_run`; docs/audit.md.
"""
