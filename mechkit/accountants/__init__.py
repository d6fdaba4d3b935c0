"""Stage 4 of the pipeline: accountants that answer epsilon(delta) and delta(epsilon) of a composition.

``fft`` (PRV/FFT composer with certified bounds), ``spa`` (saddle-point accountant), ``edgeworth`` and
``edgeworth_bound`` (Edgeworth accountant and its certified interval), ``rdp`` (Renyi-DP upper bound),
``gdp`` (mu-GDP closed forms and the CLT approximation), ``auto`` (the SPA where its certified interval is within
the budget, the FFT otherwise or where the FFT cannot answer).  An accountant touches no mechanism: it asks a
composition's PLRVs for what ``docs/mechanism-contract.md`` lists.
"""

#: the methods a composition's queries take (``method=``); each accountant's module is imported on first use
METHODS = ("fft", "spa", "edgeworth", "rdp", "gdp", "auto")
