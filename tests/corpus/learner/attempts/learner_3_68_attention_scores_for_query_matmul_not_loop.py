"""attention_scores_for_query: (common slip) skipped the requested loop and wrote one matrix-vector product inputs @ query."""


def attention_scores_for_query(inputs, query):
    return inputs @ query
