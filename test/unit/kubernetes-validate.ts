/**
 * Checks Kubernetes objects against the Kubernetes API's JSON schemas, offline: the schemas that
 * the `kubernetes-models` packages ship, compiled to validators (types, enums, required fields,
 * formats). Reads a JSON array of objects on stdin and prints, as JSON, what is wrong with each.
 *
 * A program of its own because those packages are ES modules only, which jest's module registry
 * cannot load; test/unit/helm-chart.test.ts runs it with tsx.
 */
interface Validatable {
  validate(): void;
}

type ModelClass = new (data: never) => Validatable;

/**
 * The kinds the chart makes, by `apiVersion/kind`. Imported, not required: the packages export
 * their modules to `import` only.
 */
async function loadModels(): Promise<Record<string, ModelClass>> {
  const { Deployment, StatefulSet } = await import('kubernetes-models/apps/v1');
  const { HorizontalPodAutoscaler } = await import('kubernetes-models/autoscaling/v2');
  const { Job } = await import('kubernetes-models/batch/v1');
  const { PodDisruptionBudget } = await import('kubernetes-models/policy/v1');
  const { Service, ServiceAccount } = await import('kubernetes-models/v1');
  const { ServiceMonitor } = await import('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1');
  return {
    'apps/v1/Deployment': Deployment,
    'apps/v1/StatefulSet': StatefulSet,
    'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
    'batch/v1/Job': Job,
    'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
    'v1/Service': Service,
    'v1/ServiceAccount': ServiceAccount,
    'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
  };
}

export interface ValidationResult {
  object: string;
  /** Empty when the object fits its schema. */
  errors: string[];
}

export interface KubernetesObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string };
}

function validateObject(models: Record<string, ModelClass>, object: KubernetesObject): ValidationResult {
  const key = `${object.apiVersion}/${object.kind}`;
  const name = `${key} ${object.metadata?.name ?? '(no name)'}`;
  const Model = models[key];
  if (!Model)
    return { object: name, errors: [`no schema for ${key} here: add its model to test/unit/kubernetes-validate.ts`] };
  try {
    new Model(object as never).validate();
    return { object: name, errors: [] };
  } catch (err) {
    // The validator's message names each path that does not fit and why.
    return { object: name, errors: [(err as Error).message] };
  }
}

async function main(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += String(chunk);
  const objects = JSON.parse(input) as KubernetesObject[];
  const models = await loadModels();
  process.stdout.write(JSON.stringify(objects.map((object) => validateObject(models, object))));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
