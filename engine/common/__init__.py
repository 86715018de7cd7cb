"""What the matcher, the catalog and the gap log share: text normalisation and where shipped files live."""
