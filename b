dprl replay: unexpected argument "N"
