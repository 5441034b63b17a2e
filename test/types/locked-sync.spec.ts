import { join } from 'node:path';
import * as ts from 'typescript';

const root = join(__dirname, '..', '..');
/** A virtual file next to this spec, so `../../lib` resolves as it does in the type tests. */
const file = join(__dirname, 'sync-method.virtual.ts');
const source = `import { Locked } from '../../lib';
export class OrdersService {
  @Locked('order:<id>')
  pay(id: string): number {
    return id.length;
  }
}
`;

/** What tsc says about `source`, with the project's compiler options. */
function diagnostics(): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.json'),
    { noEmit: true },
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined },
  );
  if (!config) throw new Error('tsconfig.json did not parse');
  const host = ts.createCompilerHost(config.options);
  const getSourceFile = host.getSourceFile;
  host.getSourceFile = (name, language, ...rest) =>
    name === file
      ? ts.createSourceFile(name, source, language)
      : getSourceFile.call(host, name, language, ...rest);
  const fileExists = host.fileExists;
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  const program = ts.createProgram([file], config.options, host);
  return ts
    .getPreEmitDiagnostics(program, program.getSourceFile(file))
    .map((d) => `TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

describe('@Locked on a synchronous method', () => {
  it('the compile error says what to do, not only that LockedResult does not fit', () => {
    const errors = diagnostics();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^TS1241: /);
    expect(errors[0]).toContain(
      "Property ''@Locked needs a method that returns a Promise or an Observable: make it async'' is missing",
    );
  });
});
