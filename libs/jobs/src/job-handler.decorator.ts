import { SetMetadata } from '@nestjs/common';
import { JobName } from './job-names';

export const JOB_HANDLER_METADATA = 'compactor:job-handler';

/** Marks a provider method as the handler of one job; the worker discovers these at startup. */
export const OnJob = (name: JobName): MethodDecorator => SetMetadata(JOB_HANDLER_METADATA, name);
