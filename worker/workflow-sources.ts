/**
 * What goes into the workflow bundle, wherever it is built (`npm run build`, the test stack, a
 * worker without a prebuilt bundle): the workflows and the bundle's workflow interceptors.
 */
export function workflowSources(): { workflowsPath: string; workflowInterceptorModules: string[] } {
  return {
    workflowsPath: require.resolve('../workflows'),
    workflowInterceptorModules: [require.resolve('../workflows/tracing-interceptors')],
  };
}
