"""One module per method; each builds a StateGraph from shared nodes. `registry` maps names to builders."""
