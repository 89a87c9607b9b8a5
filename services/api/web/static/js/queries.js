// Every GraphQL document the UI sends, in one place so schema changes are easy to follow.

import { SHOWN_FIGURES } from "./figures.js";

const INTERVAL = "estimate low high reason";

// A run's 95 % intervals, shown beside its figures.
const CONFIDENCE = `
  confidence {
    basis units level
    samplesPerSecond { ${INTERVAL} } latencyP50 { ${INTERVAL} }
    latencyP90 { ${INTERVAL} } latencyP99 { ${INTERVAL} }
  }
`;

// A training run's figures (Run.training): its settings, images/s with its 95 % interval,
// and whether its host was busy.
const TRAINING = `
  training {
    workers peakRssBytes cudaMaxAllocatedBytes
    settings { key label value }
    statistics {
      steps imagesPerSecond standardError low high intervalReason intervalMethod jitter
      meanStepMs medianStepMs standardErrorStepMs totalImages totalS dataShare
    }
    host { busy busyReason overlapped exclusive waitedForHostS threads }
  }
`;

const RUN_SUMMARY = `
  id validity samplesPerSecond ${SHOWN_FIGURES}
  metrics { name value unit }
  report
`;

export const EVALUATIONS = `
query Evaluations($where: EvaluationFilter, $first: Int!, $after: String) {
  evaluations(where: $where, first: $first, after: $after) {
    totalCount nextCursor
    items {
      id state reason modelName modelVersion framework scenario batchSize createdAt done groupId groupKind workload
      runs { ${RUN_SUMMARY} }
    }
  }
}`;

export const EVALUATION = `
query Evaluation($id: String!) {
  evaluation(id: $id) {
    id state reason done modelName modelVersion framework device scenario batchSize
    dataset samples traceLevel preprocessing threads queue agentId shardsTotal shardsReady
    preprocessReused createdAt updatedAt finishedAt workload workloadOptions groupId groupKind
    runs {
      ${RUN_SUMMARY}
      frameworkVersion scenario mode batchSize dataset preprocessReused environment
      ${CONFIDENCE}
      ${TRAINING}
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
  datasets(first: 100) { items { name images more classes } totalCount complete }
}`;

export const SUBMIT = `
mutation Submit($input: SubmitEvaluationInput!) {
  submitEvaluation(input: $input) {
    __typename
    ... on Evaluation { id state }
    ... on Comparison { id }
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

// What a run's charts draw: bounded server-side (latencySample, traceTimeline take a limit).
export const LATENCY_POINTS = 2000;
// The timeline's spans (the longest, above this) and the flame graph's stack paths (those
// with the most time, above this): a LIBRARY-level resnet18 trace holds about 2,500 spans.
export const TRACE_SPANS = 3000;
export const FLAME_PATHS = 2000;

export const RUN_CHARTS = `
query RunCharts($id: String!, $points: Int!, $spans: Int!, $paths: Int!) {
  evaluation(id: $id) {
    id traceLevel
    runs {
      id
      latencySample(limit: $points) { totalCount latenciesMs cumulativeFractions downsampled method }
      layers { name type calls medianMs iqrMs percent own }
      roofline {
        peaks { device threads gflops gbps gflopsIqr gbpsIqr method }
        ridgeFlopsPerByte unplaced method
        points { name type own flops flopsEstimated bytes intensity medianMs gflops gbps roofGflops ofRoof bound }
      }
      traceTimeline(limit: $spans) {
        totalSpans truncated note wholeStartMs wholeEndMs
        iterations { startMs endMs note }
        spans { name category thread startMs durationMs }
      }
      traceFlame(limit: $paths) {
        totalPaths truncated note focusId
        nodes { id parent name category thread depth calls totalMs selfMs medianMs iqrMs firstStartMs }
      }
      operators {
        iterations perLayerSource
        operators { name kind calls totalMs medianMs iqrMs percent }
        perLayer { layer ops { name kind calls medianMs iqrMs } }
      }
    }
  }
}`;

// What a training run's charts draw: its step times (bounded server-side, with the count
// kept) and its progress lines (the loss).
export const STEP_POINTS = 2000;
export const LOG_LINES = 500;

export const TRAINING_CHARTS = `
query TrainingCharts($id: String!, $points: Int!, $lines: Int!) {
  evaluation(id: $id) {
    id
    runs {
      id
      training {
        statistics { meanStepMs medianStepMs }
        stepTimes(limit: $points) { totalCount steps seconds downsampled method }
        log(limit: $lines) { step imagesPerSecond standardError jitter loss }
      }
    }
  }
}`;

// One evaluation as the compare page shows it: settings, figures, verdicts, its CDF.
export const COMPARED = `
query Compared($id: String!, $points: Int!) {
  evaluation(id: $id) {
    id state modelName modelVersion framework device scenario batchSize dataset samples
    traceLevel agentId groupId createdAt workload workloadOptions
    runs {
      id validity stability samplesPerSecond frameworkVersion ${SHOWN_FIGURES}
      metrics { name value unit }
      settings
      ${CONFIDENCE}
      ${TRAINING}
      latencySample(limit: $points) { totalCount latenciesMs cumulativeFractions downsampled method }
    }
  }
}`;

export const GROUP = `
query Group($groupId: String!) {
  compare(groupId: $groupId) { id model scenario done rows { evaluationId agentId } }
}`;

export const AGENTS = `
query Agents {
  agents(liveOnly: false) {
    id hostname queue framework frameworkVersion device hardware software settings
    startedAt lastHeartbeat live
  }
}`;

export const AGENT_RUNS = `
query AgentRuns($agent: String!, $first: Int!) {
  evaluations(where: { agent: $agent }, first: $first) {
    totalCount
    items { id state modelName modelVersion scenario batchSize createdAt runs { id validity stability samplesPerSecond ${SHOWN_FIGURES} } }
  }
}`;

export const MODELS = `
query Models {
  models { name version framework description origin shared manifest }
}`;

export const SUBMIT_SWEEP = `
mutation SubmitSweep($input: SubmitSweepInput!) {
  submitSweep(input: $input) {
    __typename
    ... on Sweep { groupId }
    ... on UserError { message field }
  }
}`;

export const SWEEP = `
query Sweep($id: String!) {
  sweep(groupId: $id) {
    groupId parameter modelLoads
    points {
      value
      evaluation { id state reason modelName modelVersion framework scenario }
      samplesPerSecond latencyP50Ms latencyP90Ms latencyP99Ms validity stability modelKept
      run { id ${SHOWN_FIGURES} confidence { samplesPerSecond { ${INTERVAL} } latencyP99 { ${INTERVAL} } } }
    }
  }
}`;

export const SUBMIT_FIND_PEAK = `
mutation SubmitFindPeak($input: SubmitFindPeakInput!) {
  submitFindPeak(input: $input) {
    __typename
    ... on FindPeak { groupId }
    ... on UserError { message field }
  }
}`;

export const FIND_PEAK = `
query FindPeak($id: String!) {
  findPeak(groupId: $id) {
    groupId latencyBoundMs percentile tolerance maxProbes state verdict startQps
    estimate { id state reason modelName modelVersion framework }
    probes {
      qps runId passed latencyMs completedQps validity stability judged reason
      latencyInterval { ${INTERVAL} }
      evaluation { id state reason modelName modelVersion framework agentId runs { id ${SHOWN_FIGURES} } }
    }
    peakQps peakLatencyMs peakRunId reason advice
  }
}`;

export const SUBMIT_REPEATS = `
mutation SubmitRepeats($input: SubmitRepeatsInput!) {
  submitRepeats(input: $input) {
    __typename
    ... on Repeats { groupId }
    ... on UserError { message field }
  }
}`;

export const REPEATS = `
query Repeats($id: String!) {
  repeats(groupId: $id) {
    groupId count agents
    repeats {
      index
      evaluation { id state reason modelName modelVersion framework scenario agentId }
      run {
        id validity stability samplesPerSecond ${SHOWN_FIGURES} metrics { name value unit }
        confidence { samplesPerSecond { ${INTERVAL} } }
      }
    }
    spread { name unit count min median max mean stdev cv }
    confidence {
      basis units level
      samplesPerSecond { ${INTERVAL} } latencyMean { ${INTERVAL} } latencyP50 { ${INTERVAL} }
      latencyP90 { ${INTERVAL} } latencyP99 { ${INTERVAL} }
    }
  }
}`;

export const TRAINING_SCALING = `
query TrainingScaling($id: String!) {
  trainingScaling(groupId: $id) {
    groupId worldSizes state stopped
    points {
      worldSize state imagesPerSecond standardError speedup efficiency weightsAgree
      ranks { rank runId imagesPerSecond hostBusy evaluation { id state reason agentId modelName modelVersion } }
    }
  }
}`;

export const ADVICE = `
query Advice($model: String!, $bound: Float!, $percentile: Float!) {
  advice(model: $model, latencyBoundMs: $bound, percentile: $percentile) {
    __typename
    ... on Advice {
      model latencyBoundMs percentile cheapest conclusion missing
      systems {
        system machine framework status qps latencyMs runId groupId validity stability busy busyNote
        pricePerHour costPerMillion costUnit ratePerSecond notes command
      }
    }
    ... on InvalidInput { message field }
  }
}`;

export const HISTORY = `
query History($model: String!, $figure: String!) {
  history(model: $model, figure: $figure) {
    __typename
    ... on History {
      figure
      series {
        system unit
        points { runId createdAt value interval validity stabilityVerdict busy changes }
        changePoints { runId before after change band better interval changes }
      }
    }
    ... on InvalidInput { message field }
  }
}`;

export const CANCEL_GROUP = `
mutation CancelGroup($id: String!) {
  cancelGroup(groupId: $id) {
    __typename
    ... on GroupCancelled { groupId cancelled alreadyFinished }
    ... on UserError { message field }
  }
}`;

export const SUBMIT_PAIR = `
mutation SubmitPair($input: SubmitEvaluationInput!) {
  submitAccuracyPerformancePair(input: $input) {
    __typename
    ... on AccuracyPerformancePair { groupId }
    ... on UserError { message field }
  }
}`;

export const SUBMIT_TRAINING_SCALING = `
mutation SubmitTrainingScaling($input: SubmitTrainingScalingInput!) {
  submitTrainingScaling(input: $input) {
    __typename
    ... on TrainingScaling { groupId }
    ... on UserError { message field }
  }
}`;

export const REGISTER_MODEL = `
mutation RegisterModel($manifest: String!, $shared: Boolean!) {
  registerModel(manifest: $manifest, shared: $shared) {
    __typename
    ... on Model { name version }
    ... on UserError { message field }
  }
}`;
