// Every GraphQL document the UI sends, in one place so schema changes are easy to follow.

const RUN_SUMMARY = `
  id validity samplesPerSecond
  metrics { name value unit }
  report
`;

export const EVALUATIONS = `
query Evaluations($where: EvaluationFilter, $first: Int!, $after: String) {
  evaluations(where: $where, first: $first, after: $after) {
    totalCount nextCursor
    items {
      id state modelName modelVersion framework scenario batchSize createdAt done
      runs { ${RUN_SUMMARY} }
    }
  }
}`;

export const EVALUATION = `
query Evaluation($id: String!) {
  evaluation(id: $id) {
    id state reason done modelName modelVersion framework device scenario batchSize
    dataset samples traceLevel queue agentId shardsTotal shardsReady preprocessReused
    createdAt updatedAt finishedAt
    runs {
      ${RUN_SUMMARY}
      frameworkVersion scenario mode batchSize dataset preprocessReused environment
      logs { name url }
    }
  }
}`;

export const EVALUATION_UPDATES = `
subscription Updates($id: String!) {
  evaluationUpdates(id: $id) { id state reason done shardsReady shardsTotal preprocessReused }
}`;

export const FORM_CHOICES = `
query FormChoices {
  models { name version framework description origin }
  agents { framework device }
}`;

export const SUBMIT = `
mutation Submit($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename
    ... on Evaluation { id state }
    ... on UserError { message field }
  }
}`;

export const CANCEL = `
mutation Cancel($id: String!) {
  cancelEvaluation(id: $id) {
    __typename
    ... on Evaluation { id state }
    ... on UserError { message field }
  }
}`;
